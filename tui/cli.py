"""Command line: `diffusion-chat` (the chat app), `diffusion-chat generate` (headless, for scripts) and
`diffusion-chat serve` (an OpenAI-compatible server).

Every problem with the input ends in one line on stderr and a non-zero exit, never a traceback
(set DIFFUSION_CHAT_DEBUG=1 to see tracebacks of unexpected errors).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path
from typing import Sequence

DESCRIPTION = """\
Chat with local block-diffusion language models (DiffusionGemma, LLaDA-2 MoE) on MLX and watch
every block denoise live.

  diffusion-chat [--model M] [options]          open the chat app
  diffusion-chat --server URL [--api-key K]     open the chat app against an OpenAI-compatible server
  diffusion-chat generate --model M --prompt P  generate one reply headless (see `generate --help`)
  diffusion-chat serve --model M [--port 8000]  serve the model over HTTP (see `serve --help`)
  diffusion-chat replay FILE|CONVERSATION       replay a recorded denoising (see `replay --help`)

--model takes a checkpoint folder or a Hugging Face id (downloaded into the shared HF cache;
HF_HUB_OFFLINE=1 uses the cache only); with --server it names the server's model (default: its
first). Sampler options left out take the checkpoint's defaults."""

SERVE_DESCRIPTION = """\
Serve the model over HTTP with OpenAI's chat completions API, on one engine thread: requests are
queued and answered one at a time (the X-Queue-Position header says how many were ahead).

  GET  /health                no key needed
  GET  /v1/models             the model, with its family, defaults and the settings it takes
  POST /v1/chat/completions   stream or not; images as image_url data URLs; sampler fields with the
                              flags' names (max_denoising_steps, diffusion_sampler, ..., temperature
                              for --temp); "enable_thinking": true (or chat_template_kwargs) thinks;
                              "diffusion_frames": true streams every denoising step (<= 30/s) as an
                              extra empty chunk with a diffusion_frame object (see README)

Streams send text only when a block is committed. A client that disconnects cancels its answer within
one denoising step. Binds to 127.0.0.1 unless --host says otherwise; use --api-key (or the
DIFFUSION_CHAT_API_KEY variable) before listening on other addresses. The sampler flags below set
the server's defaults; each request may override them."""

GENERATE_DESCRIPTION = """\
Generate one reply without the app. The answer streams to stdout block by block; with --think the
reasoning goes to stderr. --json prints one JSON object instead; --profile adds timings.

--fill "The ___ sat on the [...]{3}." makes the answer that text: it stays as given and only the holes
(___ or [...]: 8 tokens; ___{n}: n tokens; a backslash keeps a marker as text) are denoised, seeing the text on
both sides; --prompt then defaults to the text itself. --record FILE writes the denoising trajectory
(`diffusion-chat replay FILE` shows it)."""


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
    parser.add_argument("--server", metavar="URL",
                        help="chat against this OpenAI-compatible server (http://host:port, with or without /v1) "
                             "instead of running a model here")
    parser.add_argument("--api-key", metavar="KEY", help="the server's API key (default: $DIFFUSION_CHAT_API_KEY)")
    add_sampler_flags(parser)
    return parser


def serve_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="diffusion-chat serve", description=SERVE_DESCRIPTION,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", "-m", help="checkpoint folder or Hugging Face id (required)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any free port)")
    parser.add_argument("--api-key", metavar="KEY",
                        help="require Authorization: Bearer KEY (default: $DIFFUSION_CHAT_API_KEY, else no key)")
    parser.add_argument("--allow-local-files", action="store_true",
                        help="let image_url parts name files on this machine (file:// or a path); off: data URLs only")
    parser.add_argument("--max-tokens-limit", type=int, default=4096, metavar="N",
                        help="the largest max_tokens a request may ask for (default 4096)")
    parser.add_argument("--max-body-mb", type=float, default=32.0, metavar="MB",
                        help="largest request body (default 32 MiB; larger: HTTP 413)")
    parser.add_argument("--max-image-mb", type=float, default=16.0, metavar="MB",
                        help="largest image, decoded (default 16 MiB; larger: HTTP 413)")
    parser.add_argument("--max-queue", type=int, default=16, metavar="N",
                        help="requests waiting or running at most (default 16; more: HTTP 503)")
    add_sampler_flags(parser)
    return parser


def generate_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="diffusion-chat generate", description=GENERATE_DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_flags(parser)
    parser.add_argument("--prompt", "-p", help="the user message ('-' reads stdin); required unless --fill")
    parser.add_argument("--fill", metavar="TEXT", help="answer with TEXT, denoising only its ___ / [...] holes")
    parser.add_argument("--record", metavar="FILE", help="write the denoising trajectory to FILE")
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
    parser = generate_parser()
    args = parser.parse_args(argv)
    if args.prompt is None and args.fill is None:
        parser.error("the following arguments are required: --prompt (or --fill)")
    from engine.errors import EngineError

    try:
        settings = settings_from_args(args)
        prompt = sys.stdin.read() if args.prompt == "-" else args.prompt if args.prompt is not None else args.fill
        if not prompt.strip() and not args.image:
            return fail("the prompt is empty")
        if args.fill is not None and args.think:
            return fail("--fill answers have no thinking channel: leave out --think")
        if not args.model:
            return fail("--model is required (a checkpoint folder or a Hugging Face id)")
        import engine

        model = engine.load(args.model, progress=_print_download_progress)
        messages = ([{"role": "system", "content": args.system}] if args.system else []) + [
            {"role": "user", "content": prompt}]
        cancel = threading.Event()
        try:
            result = _consume(engine.generate(model, messages=messages, settings=settings, think=args.think,
                                              cancel=cancel, images=args.image or None, fill=args.fill,
                                              record=bool(args.record)), stream=not args.json)
        except KeyboardInterrupt:
            cancel.set()
            return fail("interrupted", 130)
    except EngineError as exc:
        return fail_with(exc)
    finished, blocks = result
    if args.record:
        try:
            Path(args.record).expanduser().write_bytes(finished.trajectory)
        except OSError as exc:
            return fail(f"cannot write {args.record}: {exc.strerror or exc}")
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
        "filled_spans": [list(span) for span in finished.filled_spans],
        "edits_per_block": [b.edits for b in blocks],
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


def run_serve(argv: Sequence[str]) -> int:
    args = serve_parser().parse_args(argv)
    from engine.errors import EngineError

    try:
        settings = settings_from_args(args)
    except EngineError as exc:
        return fail_with(exc)
    if not args.model:
        return fail("--model is required (a checkpoint folder or a Hugging Face id)")
    for flag_name, value in (("--port", args.port), ("--max-tokens-limit", args.max_tokens_limit),
                             ("--max-body-mb", args.max_body_mb), ("--max-image-mb", args.max_image_mb),
                             ("--max-queue", args.max_queue)):
        if value < (0 if flag_name == "--port" else 1) or (flag_name == "--port" and value > 65535):
            return fail(f"{flag_name} is out of range: {value:g}")
    from engine.serve.app import ServeOptions
    from engine.serve.requests import Limits
    from engine.serve.run import LoadError, ServeError, serve

    limits = Limits(max_tokens=args.max_tokens_limit, max_image_bytes=int(args.max_image_mb * 2**20),
                    allow_local_files=args.allow_local_files)
    options = ServeOptions(api_key=args.api_key or os.environ.get("DIFFUSION_CHAT_API_KEY") or None, limits=limits,
                           max_body_bytes=int(args.max_body_mb * 2**20), defaults=settings)
    try:
        serve(args.model, args.host, args.port, options, max_queue=args.max_queue)
    except (LoadError, ServeError) as exc:
        return fail(str(exc))
    return 0


def run_app(argv: Sequence[str]) -> int:
    args = app_parser().parse_args(argv)
    from engine.errors import EngineError

    try:
        settings = settings_from_args(args)
    except EngineError as exc:
        return fail_with(exc)
    from tui.app import AppOptions, run_app as start

    api_key = args.api_key or os.environ.get("DIFFUSION_CHAT_API_KEY") or None
    return start(AppOptions(model=args.model, settings=settings, images=list(args.image), think=args.think,
                            server=args.server, api_key=api_key)) or 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "generate":
            return run_generate(argv[1:])
        if argv and argv[0] == "serve":
            return run_serve(argv[1:])
        if argv and argv[0] == "replay":
            from .replay_cli import run_replay

            return run_replay(argv[1:])
        return run_app(argv)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the promise: one line, never a traceback
        if os.environ.get("DIFFUSION_CHAT_DEBUG"):
            raise
        return fail(f"unexpected {type(exc).__name__}: {exc}".splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
