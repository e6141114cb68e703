"""`diffusion-chat generate`: one reply without the app, streamed to stdout (reasoning to stderr), or as JSON."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Sequence

from .common import Parser, add_model_flags, add_sampler_flags, fail, fail_with, settings_from_args
from .words import count, human

GENERATE_DESCRIPTION = """\
Generate one reply without the app. The answer streams to stdout block by block; with --think the
reasoning goes to stderr. --json prints one JSON object instead; --profile adds timings.

--fill "The ___ sat on the [...]{3}." makes the answer that text: it stays as given and only the holes
(___ or [...]: 8 tokens; ___{n}: n tokens; a backslash keeps a marker as text) are denoised, seeing the text on
both sides; --prompt then defaults to the text itself. --record FILE writes the denoising trajectory
(`diffusion-chat replay FILE` shows it)."""


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


def run_generate(argv: Sequence[str]) -> int:
    parser = generate_parser()
    args = parser.parse_args(argv)
    if args.prompt is None and args.fill is None:
        parser.error("the following arguments are required: --prompt (or --fill)")
    from engine.errors import EngineError

    try:
        settings = settings_from_args(args)
        prompt = read_stdin() if args.prompt == "-" else args.prompt if args.prompt is not None else args.fill
        if not prompt.strip() and not args.image:
            return fail("the prompt is empty")
        if args.fill is not None and args.think:
            return fail("--fill answers have no thinking channel: leave out --think")
        if not args.model:
            return fail("--model is required (a checkpoint folder or a Hugging Face id)")
        import engine

        engine.prepare_process()  # before MLX is imported: this process runs the model
        model = engine.load(args.model, progress=_print_download_progress)
        messages = ([{"role": "system", "content": args.system}] if args.system else []) + [
            {"role": "user", "content": prompt}]
        cancel = threading.Event()
        reading = PrefillLine() if sys.stderr.isatty() else None
        try:
            result = _consume(engine.generate(model, messages=messages, settings=settings, think=args.think,
                                              cancel=cancel, images=args.image or None, progress=reading,
                                              fill=args.fill, record=bool(args.record)),
                              stream=not args.json, reading=reading)
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
        _print_profile(finished, blocks, model.notices())
    return 0


def read_stdin() -> str:
    """All of stdin as UTF-8 text; bytes that are not UTF-8 are refused with one line saying where."""
    from engine.errors import InputError

    binary = getattr(sys.stdin, "buffer", None)
    if binary is None:  # a text stream already (tests, embedding programs): the engine checks its characters
        return sys.stdin.read()
    data = binary.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(utf8_problem(data, exc.start, exc.reason))


def utf8_problem(data: bytes, offset: int, reason: str) -> str:
    """One line naming the first byte of `data` that is not UTF-8, and why."""
    if data[offset] == 0xED and offset + 1 < len(data) and 0xA0 <= data[offset + 1] <= 0xBF:
        # ED A0..BF .. encodes U+D800..U+DFFF, which UTF-8 forbids (CESU-8 / WTF-8 writers produce it).
        what = "a UTF-8-encoded lone surrogate (U+D800..U+DFFF), which UTF-8 forbids"
    else:
        what = f"byte 0x{data[offset]:02X}: {reason}"
    return f"stdin is not valid UTF-8 text: at byte {offset:,}, {what}; convert it to UTF-8 first"


def _consume(events, stream: bool, reading: PrefillLine | None = None):
    from engine.events import BlockCommitted, Finished, Started

    blocks = []
    finished = None
    for event in events:
        if isinstance(event, Started) and reading is not None:
            reading.done()
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


def _print_profile(finished, blocks, notices: tuple[str, ...]) -> None:
    stats = finished.stats
    out = sys.stderr
    for notice in notices:
        print(notice, file=out)
    print("profile:", file=out)
    for block, steps in zip(blocks, stats.steps_per_block):
        print(f"  block {block.block + 1}: {count(steps, 'step')}, {count(len(block.token_ids), 'token')}, "
              f"stop: {human(block.stop_reason)}", file=out)
    print(f"  prefill: {stats.prompt_tokens} tokens in {stats.prefill_s * 1000:.1f} ms", file=out)
    print(f"  denoising: {count(sum(stats.steps_per_block), 'step')}, {stats.ms_per_step:.2f} ms/step, "
          f"{stats.work_tokens} work tokens", file=out)
    print(f"  generation: {stats.generated_tokens} tokens in {stats.total_s:.3f} s = {stats.tokens_per_s:.2f} tokens/s",
          file=out)
    print(f"  peak memory: {stats.peak_memory_bytes / 2**20:.1f} MiB", file=out)


class PrefillLine:
    """A long prompt takes a while to read on a CPU: one stderr line says how far it got (on a terminal only,
    so scripts reading stderr see nothing new)."""

    def __init__(self):
        self.shown = False

    def __call__(self, event) -> None:
        print(f"\rreading the prompt: {event.encoded_tokens:,} / {event.total_tokens:,} tokens", end="",
              file=sys.stderr, flush=True)
        self.shown = True

    def done(self) -> None:
        if self.shown:
            print(file=sys.stderr)
            self.shown = False


_last_report = [0]


def _print_download_progress(done: int, total, description: str, stage: str = "download") -> None:
    if stage != "download":
        return   # reading the weights and compiling kernels stay quiet here: the CLI's output is the answer
    if total and done - _last_report[0] >= total // 20 or done == total:
        _last_report[0] = done
        share = f"{100 * done / total:.0f}%" if total else f"{done / 2**20:.0f} MiB"
        print(f"\rdownloading {description}: {share}", end="", file=sys.stderr, flush=True)
