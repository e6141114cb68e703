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
    """One flag per `engine.Settings` field, from its schema. A flag left out is absent from the result (not
    "equal to the default"), so it never overrides a saved setting; booleans also get a `--no-` form."""
    from engine.settings import SPECS, flag

    groups = {
        "both": parser.add_argument_group("generation (both families)",
                                          "left out = the saved setting, else the checkpoint's generation_config"),
        "diffusion_gemma": parser.add_argument_group("DiffusionGemma"),
        "llada2_moe": parser.add_argument_group("LLaDA-2"),
    }
    for name, spec in SPECS.items():
        group = groups["both" if len(spec.families) > 1 else spec.families[0]]
        options = dict(dest=name, default=argparse.SUPPRESS, help=spec.help)
        if spec.kind is bool:
            group.add_argument(flag(name), action=argparse.BooleanOptionalAction, **options)
        else:
            # Choices are checked by the schema (one message style), not by argparse.
            group.add_argument(flag(name), type=spec.kind, metavar=_metavar(spec), **options)


def _metavar(spec) -> str:
    return {int: "N", float: "X", str: "NAME"}[spec.kind]


def settings_from_args(args: argparse.Namespace):
    """The settings given on the command line (only those), checked."""
    from engine.settings import SPECS, Settings

    return Settings(**{name: getattr(args, name) for name in SPECS if hasattr(args, name)}).validated()


def app_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="diffusion-chat", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_flags(parser)
    parser.add_argument("--system", "-s", metavar="TEXT",
                        help="system prompt of new conversations (change it in the app with /system TEXT)")
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


def fail_with(error: Exception) -> int:
    """An EngineError as one line; settings are named by their flags here (and only here)."""
    from engine.errors import SettingsError
    from engine.settings import flag

    return fail(error.render(flag) if isinstance(error, SettingsError) else str(error))


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
            result = _consume(engine.generate(model, messages=messages, settings=settings, think=args.think,
                                              cancel=cancel, images=args.image or None), stream=not args.json)
        except KeyboardInterrupt:
            cancel.set()
            return fail("interrupted", 130)
    except EngineError as exc:
        return fail_with(exc)
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
            blocks.append(event)
            deltas = event.reasoning_delta, event.content_delta
        elif isinstance(event, Finished):
            finished = event
            deltas = event.reasoning_tail, event.content_tail
        else:
            continue
        if stream:
            _print_text(*deltas)
    return finished, blocks


def _print_text(reasoning: str, content: str) -> None:
    if reasoning:
        print(reasoning, end="", file=sys.stderr, flush=True)
    if content:
        print(content, end="", flush=True)


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
        return fail_with(exc)
    from tui.app import AppOptions, run_app as start

    return start(AppOptions(model=args.model, settings=settings, images=list(args.image), think=args.think,
                            system_prompt=args.system)) or 0


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
