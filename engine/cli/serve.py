"""`diffusion-chat serve`'s command line: the server's flags (its sampler flags from the settings schema) and
the run that loads the model and serves it (engine.serve). Headless: no UI is imported."""

from __future__ import annotations

import argparse
import os
from typing import Sequence

from .common import Parser, add_sampler_flags, fail, fail_with, number, settings_from_args

SERVE_DESCRIPTION = """\
Serve the model over HTTP with OpenAI's chat and text completions APIs, on one engine thread:
up to --max-batch requests are denoised together in one batched forward pass, the rest wait in a
queue (the X-Queue-Position header says how many were ahead).

  GET  /health                no key needed
  GET  /metrics               Prometheus text: requests, tokens, queue depth, steps per block, s/step
  GET  /v1/models             the model, with its family, defaults and the settings it takes
  POST /v1/chat/completions   stream or not; images as image_url data URLs; sampler fields with the
                              flags' names (max_denoising_steps, diffusion_sampler, ..., temperature
                              for --temp); "enable_thinking": true (or chat_template_kwargs) thinks;
                              "diffusion_frames": true streams every denoising step (<= 30/s) as an
                              extra empty chunk with a diffusion_frame object (see README)
  POST /v1/completions        prompt and suffix: the text between them is denoised (infilling),
                              max_tokens (default 16) positions in one block

Streams send text only when a block is committed; stop strings apply at block commits. A request
without a seed draws one (reported as "seed"). A client that disconnects cancels its answer within
one denoising step; ctrl-c closes every running stream with a finish chunk and [DONE], then exits.
Binds to 127.0.0.1 unless --host says otherwise; use --api-key (or the DIFFUSION_CHAT_API_KEY
variable) before listening on other addresses. The sampler flags below set
the server's defaults (a flag left out: the checkpoint's default; the app's saved settings are not
read); each request may override them."""


def serve_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="diffusion-chat serve", description=SERVE_DESCRIPTION,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", "-m", help="checkpoint folder or Hugging Face id (required)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=number(int, 0, 65535), default=8000, help="port (default 8000; 0 = any free port)")
    parser.add_argument("--api-key", metavar="KEY",
                        help="require Authorization: Bearer KEY (default: $DIFFUSION_CHAT_API_KEY, else no key)")
    parser.add_argument("--allow-local-files", action="store_true",
                        help="let image_url parts name files on this machine (file:// or a path); off: data URLs only")
    parser.add_argument("--max-tokens-limit", type=number(int, 1, 1 << 24), default=4096, metavar="N",
                        help="the largest max_tokens a request may ask for (default 4096)")
    parser.add_argument("--max-body-mb", type=number(float, 0.001, 1 << 20), default=32.0, metavar="MB",
                        help="largest request body (default 32 MiB; larger: HTTP 413)")
    parser.add_argument("--max-image-mb", type=number(float, 0.001, 1 << 20), default=16.0, metavar="MB",
                        help="largest image, decoded (default 16 MiB; larger: HTTP 413)")
    parser.add_argument("--max-queue", type=number(int, 1, 1 << 20), default=16, metavar="N",
                        help="requests waiting or running at most (default 16; more: HTTP 503)")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"),
                        help="info (default): one line per request (method, path, status, tokens, seconds); "
                             "warning: problems only")
    parser.add_argument("--cors", nargs="+", default=[], metavar="ORIGIN",
                        help="let browser pages from these origins call the API (e.g. http://localhost:3000; "
                             "* = any); default: no CORS headers")
    # A server is configured by its command line only: the chat app's saved settings (config.toml) belong to
    # whoever runs the app, not to the clients of a server.
    parser.add_argument("--max-batch", type=number(int, 1, 64), default=4, metavar="N",
                        help="requests denoised together in one batched forward pass (default 4; "
                             "1 = one after another)")
    add_sampler_flags(parser, left_out="left out = the checkpoint's generation_config (serve does not read the "
                                       "app's config.toml); each request may override them",
                      helps={"seed": "seed of every random draw (default: a new seed per request, reported in "
                                     "the response)"})
    return parser


def run_serve(argv: Sequence[str]) -> int:
    args = serve_parser().parse_args(argv)
    from engine.errors import EngineError

    try:
        settings = settings_from_args(args)
    except EngineError as exc:
        return fail_with(exc)
    if not args.model:
        return fail("--model is required (a checkpoint folder or a Hugging Face id)")
    import engine

    engine.prepare_process()  # before MLX is imported: this process runs the model
    from engine.serve.app import ServeOptions
    from engine.serve.requests import Limits
    from engine.serve.run import LoadError, ServeError, serve

    limits = Limits(max_tokens=args.max_tokens_limit, max_image_bytes=int(args.max_image_mb * 2**20),
                    allow_local_files=args.allow_local_files)
    options = ServeOptions(api_key=args.api_key or os.environ.get("DIFFUSION_CHAT_API_KEY") or None, limits=limits,
                           max_body_bytes=int(args.max_body_mb * 2**20), defaults=settings,
                           cors_origins=tuple(args.cors))
    try:
        serve(args.model, args.host, args.port, options, max_queue=args.max_queue, log_level=args.log_level,
              max_batch=args.max_batch)
    except (LoadError, ServeError) as exc:
        return fail(str(exc))
    return 0
