"""A tiny LLaDA-2 trainer and its first batch, for tests that look at one loss (needs PyTorch)."""

from __future__ import annotations

from pathlib import Path

from scripts.demo import train


def tiny_llada_first_batch(out: Path, *extra: str):
    """(trainer, its first Prepared batch): the tiny size, small-talk turns half composed, made in this process."""
    args = train.parse_args(["--family", "llada2_moe", "--out", str(out), "--size", "tiny", "--workers", "0",
                             "--examples-per-chunk", "32", "--token-budget", "1024", "--composed-chat", "0.5",
                             "--focus", "chat", *extra])
    trainer = train.Trainer(args)
    try:
        return trainer, trainer.feed.next()
    finally:
        trainer.feed.close()
