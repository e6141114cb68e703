"""A tiny LLaDA-2 trainer and its first batch, for tests that look at one loss or at what the trainer hands its
batches; the checks every share of the composed turns (--thanks-share, --intent-labels, --bare-share) gets
(needs PyTorch)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from scripts.demo import batches, train


def thanks_group(folder: Path, family: str, answer: str, reasoning: str = "") -> list:
    """16 encoded thanks turns ("thanks", "thanks !", ...) in `family`'s demo tokenizer, written to `folder`;
    with thinking when `reasoning` is given."""
    from scripts.demo.curriculum import Example
    from scripts.demo.tokenizers import load_tokenizer, write_tokenizer

    write_tokenizer(folder, family)
    tokenizer = load_tokenizer(folder, family)
    out = []
    for i in range(16):
        example = Example(task="chat", messages=({"role": "user", "content": "thanks " + "!" * i},),
                          think=bool(reasoning), reasoning=reasoning, answer=answer, subtask="thanks",
                          template="thanks")
        ids, encoded_answer = batches.encode_example(example, tokenizer)
        out.append(batches.Encoded(ids, encoded_answer, "chat"))
    return out


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


def check_share_option(option: str, attribute: str, capsys) -> None:
    """`option` takes a share in [0, 1) of the composed turns, so it needs --composed-chat."""
    for bad in ("1", "-0.1"):
        with pytest.raises(SystemExit):
            train.parse_args(["--family", "llada2_moe", "--out", "x", "--composed-chat", "0.8", option, bad])
    with pytest.raises(SystemExit):
        train.parse_args(["--family", "llada2_moe", "--out", "x", option, "0.4"])
    assert "--composed-chat" in capsys.readouterr().err
    args = train.parse_args(["--family", "llada2_moe", "--out", "x", "--composed-chat", "0.8", option, "0.4"])
    assert getattr(args, attribute) == 0.4


def check_llada_only_share(option: str, attribute: str, capsys) -> None:
    """`option` takes a share in [0, 1), and only for LLaDA-2 (its error names DiffusionGemma)."""
    with pytest.raises(SystemExit):
        train.parse_args(["--family", "diffusion_gemma", "--out", "x", option, "0.1"])
    assert "DiffusionGemma" in capsys.readouterr().err
    for bad in ("1", "-0.1"):
        with pytest.raises(SystemExit):
            train.parse_args(["--family", "llada2_moe", "--out", "x", option, bad])
    assert getattr(train.parse_args(["--family", "llada2_moe", "--out", "x", option, "0.15"]), attribute) == 0.15


def handed_to_batches(out: Path, monkeypatch, parameter: str, *extra: str) -> set:
    """The values of batches.encoded_examples' `parameter` over a tiny trainer's first batch, run with `extra`."""
    seen = []
    original = batches.encoded_examples
    bind = inspect.signature(original).bind
    monkeypatch.setattr(batches, "encoded_examples",
                        lambda *a, **k: seen.append(bind(*a, **k).arguments[parameter]) or original(*a, **k))
    tiny_llada_first_batch(out, *extra)
    return set(seen)
