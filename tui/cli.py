"""Command line: `diffusion-chat` (the chat app) and `diffusion-chat generate` (headless, for scripts).

Every problem with the input ends in one line on stderr and a non-zero exit, never a traceback
(set DIFFUSION_CHAT_DEBUG=1 to see tracebacks of unexpected errors).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from typing import Sequence

DESCRIPTION = """\
Chat with local block-diffusion language models (DiffusionGemma, LLaDA-2 MoE) on MLX and watch
every block denoise live.

  diffusion-chat [--model M] [options]          open the chat app
  diffusion-chat generate --model M --prompt P  generate one reply headless (see `generate --help`)

--model takes a checkpoint folder or a Hugging Face id (downloaded into the shared HF cache;
HF_HUB_OFFLINE=1 uses the cache only). Sampler options left out take the checkpoint's defaults."""

GENERATE_DESCRIPTION = """\
Generate one reply without the app. The answer streams to stdout block by block; with --think the
reasoning goes to stderr. --json prints one JSON object instead; --profile adds timings."""


class Parser(argparse.ArgumentParser):
    """argparse, but a bad flag is one line too (argparse would print the whole usage first)."""

    def error(self, message: str):
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def add_model_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", "-m", help="checkpoint folder or Hugging Face id")
    parser.add_argument("--image", action="append", default=[], metavar="PATH",
                        help="attach an image (repeatable; DiffusionGemma checkpoints with a vision tower)")
    parser.add_argument("--think", action="store_true", help="let the model think first (reasoning channel)")


def add_sampler_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("generation", "left out = the checkpoint's generation_config")
    g.add_argument("--max-tokens", type=int, help="most tokens to generate (default: checkpoint max_new_tokens)")
    g.add_argument("--max-denoising-steps", type=int, help="denoising steps per block (DiffusionGemma 48, LLaDA-2 32)")
    g.add_argument("--temp", type=float,
                   help="proposal temperature: DiffusionGemma 1.0 = the official distribution, 0 = argmax; "
                        "LLaDA-2 0 = greedy (default)")
    g.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    d = parser.add_argument_group("DiffusionGemma")
    d.add_argument("--diffusion-sampler", help="entropy-bound (official, default) or confidence-threshold (mlx-vlm)")
    d.add_argument("--diffusion-threshold", type=float,
                   help="confidence threshold in (0, 1] (confidence-threshold sampler 0.9; LLaDA-2 0.95)")
    d.add_argument("--diffusion-min-canvas-length", type=int, help="shortest canvas for the last block (64)")
    d.add_argument("--diffusion-max-canvas-length", type=int, help="longest canvas (the checkpoint's canvas_length)")
    d.add_argument("--diffusion-full-canvas", action="store_true",
                   help="always use the checkpoint's canvas length (the official algorithm)")
    d.add_argument("--entropy-bound", type=float, help="entropy budget per step in nats (checkpoint: 0.1)")
    d.add_argument("--t-min", type=float, help="temperature at the last step (0.4)")
    d.add_argument("--t-max", type=float, help="temperature at the first step (0.8)")
    d.add_argument("--stability-threshold", type=int, help="early stop: argmax unchanged for this many steps (1)")
    d.add_argument("--confidence-threshold", type=float, help="early stop: mean entropy below this (0.005)")
    l = parser.add_argument_group("LLaDA-2")
    l.add_argument("--block-length", type=int, help="block length (32)")
    l.add_argument("--diffusion-threshold-end", type=float,
                   help="threshold at the last step of a block (linear schedule from --diffusion-threshold)")
    l.add_argument("--top-k", type=int, help="sample among the k most likely tokens")
    l.add_argument("--top-p", type=float, help="sample from the smallest set with probability mass p")


SETTING_FLAGS = (
    "max_tokens", "max_denoising_steps", "temp", "seed", "diffusion_sampler", "diffusion_threshold",
    "diffusion_min_canvas_length", "diffusion_max_canvas_length", "diffusion_full_canvas", "entropy_bound",
    "t_min", "t_max", "stability_threshold", "confidence_threshold", "block_length", "diffusion_threshold_end",
    "top_k", "top_p", "think",
)


def settings_from_args(args: argparse.Namespace):
    from engine.settings import Settings

    return Settings(**{name: getattr(args, name) for name in SETTING_FLAGS}).validated()


def app_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="diffusion-chat", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_flags(parser)
    add_sampler_flags(parser)
    return parser


def generate_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="diffusion-chat generate", description=GENERATE_DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_flags(parser)
    parser.add_argument("--prompt", "-p", required=True, help="the user message ('-' reads stdin)")
    parser.add_argument("--system", "-s", help="a system message")
    parser.add_argument("--json", action="store_true", help="print one JSON object with the whole result")
    parser.add_argument("--profile", action="store_true", help="print steps per block, ms per step, tokens/s, memory")
    add_sampler_flags(parser)
    return parser


def fail(message: str, code: int = 1) -> int:
    print(f"diffusion-chat: error: {message}", file=sys.stderr)
    return code


def run_generate(argv: Sequence[str]) -> int:
    args = generate_parser().parse_args(argv)
    from engine.errors import EngineError

    try:
        settings = settings_from_args(args)
        prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
        if not prompt.strip() and not args.image:
            return fail("the prompt is empty")
        if not args.model:
            return fail("--model is required (a checkpoint folder or a Hugging Face id)")
        import engine

        model = engine.load(args.model, progress=_print_download_progress)
        messages = ([{"role": "system", "content": args.system}] if args.system else []) + [
            {"role": "user", "content": prompt}]
        cancel = threading.Event()
        try:
            result = _consume(engine.generate(model, messages=messages, settings=settings, cancel=cancel,
                                              images=args.image or None), stream=not args.json)
        except KeyboardInterrupt:
            cancel.set()
            return fail("interrupted", 130)
    except EngineError as exc:
        return fail(str(exc))
    finished, blocks = result
    if args.json:
        print(json.dumps(_as_json(model, finished, blocks), ensure_ascii=False))
    else:
        if finished.content and not finished.content.endswith("\n"):
            print()
        if finished.finish_reason != "stop":
            print(f"[finished: {finished.finish_reason}]", file=sys.stderr)
    if args.profile:
        _print_profile(finished, blocks)
    return 0


def _consume(events, stream: bool):
    from engine.events import BlockCommitted, Finished

    blocks = []
    finished = None
    for event in events:
        if isinstance(event, BlockCommitted):
            if event.stop_reason != "flush":
                blocks.append(event)
            if stream:
                if event.reasoning_delta:
                    print(event.reasoning_delta, end="", file=sys.stderr, flush=True)
                if event.content_delta:
                    print(event.content_delta, end="", flush=True)
        elif isinstance(event, Finished):
            finished = event
    return finished, blocks


def _as_json(model, finished, blocks) -> dict:
    stats = finished.stats
    return {
        "model": model.name,
        "family": model.family,
        "content": finished.content,
        "reasoning": finished.reasoning,
        "token_ids": list(finished.token_ids),
        "steps_per_block": list(stats.steps_per_block),
        "stop_reasons": [b.stop_reason for b in blocks],
        "finish_reason": finished.finish_reason,
        "timings": {
            "prefill_s": round(stats.prefill_s, 4),
            "denoise_s": round(stats.denoise_s, 4),
            "total_s": round(stats.total_s, 4),
            "ms_per_step": round(stats.ms_per_step, 3),
            "tokens_per_s": round(stats.tokens_per_s, 3),
        },
        "prompt_tokens": stats.prompt_tokens,
        "generated_tokens": stats.generated_tokens,
        "work_tokens": stats.work_tokens,
        "peak_memory_bytes": stats.peak_memory_bytes,
    }


def _print_profile(finished, blocks) -> None:
    stats = finished.stats
    out = sys.stderr
    print("profile:", file=out)
    for block, steps in zip(blocks, stats.steps_per_block):
        print(f"  block {block.block}: {steps} steps, {len(block.token_ids)} tokens, stop: {block.stop_reason}", file=out)
    print(f"  prefill: {stats.prompt_tokens} tokens in {stats.prefill_s * 1000:.1f} ms", file=out)
    print(f"  denoising: {sum(stats.steps_per_block)} steps, {stats.ms_per_step:.2f} ms/step, "
          f"{stats.work_tokens} work tokens", file=out)
    print(f"  generation: {stats.generated_tokens} tokens in {stats.total_s:.3f} s = {stats.tokens_per_s:.2f} tokens/s",
          file=out)
    print(f"  peak memory: {stats.peak_memory_bytes / 2**20:.1f} MiB", file=out)


_last_report = [0]


def _print_download_progress(done: int, total, description: str) -> None:
    if total and done - _last_report[0] >= total // 20 or done == total:
        _last_report[0] = done
        share = f"{100 * done / total:.0f}%" if total else f"{done / 2**20:.0f} MiB"
        print(f"\rdownloading {description}: {share}", end="", file=sys.stderr, flush=True)


def run_app(argv: Sequence[str]) -> int:
    args = app_parser().parse_args(argv)
    from engine.errors import EngineError

    try:
        settings = settings_from_args(args)
    except EngineError as exc:
        return fail(str(exc))
    from tui.app import AppOptions, run_app as start

    return start(AppOptions(model=args.model, settings=settings, images=list(args.image), think=args.think)) or 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "generate":
            return run_generate(argv[1:])
        return run_app(argv)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the promise: one line, never a traceback
        if os.environ.get("DIFFUSION_CHAT_DEBUG"):
            raise
        return fail(f"unexpected {type(exc).__name__}: {exc}".splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
