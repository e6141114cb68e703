"""Command line: `diffusion-chat` (the chat app), `diffusion-chat generate` (headless, for scripts) and
`diffusion-chat serve` (an OpenAI-compatible server).

Every problem with the input ends in one line on stderr and a non-zero exit, never a traceback
(set DIFFUSION_CHAT_DEBUG=1 to see tracebacks of unexpected errors).
"""

from __future__ import annotations

import argparse
import os
import sys
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

from engine.cli.common import Parser, add_model_flags, add_sampler_flags, fail, fail_with, settings_from_args


def app_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="diffusion-chat", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_flags(parser)
    parser.add_argument("--server", metavar="URL",
                        help="chat against this OpenAI-compatible server (http://host:port, with or without /v1) "
                             "instead of running a model here")
    parser.add_argument("--api-key", metavar="KEY", help="the server's API key (default: $DIFFUSION_CHAT_API_KEY)")
    parser.add_argument("--system", "-s", metavar="TEXT",
                        help="system prompt of new conversations (change it in the app with /system TEXT)")
    add_sampler_flags(parser)
    return parser


def run_app(argv: Sequence[str]) -> int:
    args = app_parser().parse_args(argv)
    from engine.errors import EngineError

    try:
        settings = settings_from_args(args)
    except EngineError as exc:
        return fail_with(exc)
    if not args.server:
        import engine

        engine.prepare_process()  # before MLX is imported: the engine thread runs the model here
    from tui.app import AppOptions, run_app as start

    api_key = args.api_key or os.environ.get("DIFFUSION_CHAT_API_KEY") or None
    return start(AppOptions(model=args.model, settings=settings, images=list(args.image), think=args.think,
                            server=args.server, api_key=api_key, system_prompt=args.system)) or 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "generate":
            from engine.cli.generate import run_generate

            return run_generate(argv[1:])
        if argv and argv[0] == "serve":
            from engine.cli.serve import run_serve

            return run_serve(argv[1:])
        if argv and argv[0] == "replay":
            from .replay_cli import run_replay

            return run_replay(argv[1:])
        return run_app(argv)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader stopped early (`| head -2`): not an error. Stdout goes to /dev/null so the interpreter's
        # final flush of it does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # the promise: one line, never a traceback
        if os.environ.get("DIFFUSION_CHAT_DEBUG"):
            raise
        return fail(f"unexpected {type(exc).__name__}: {exc}".splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
