"""`diffusion-chat replay`: a recorded denoising trajectory, headless, or exported as an animation.

The trajectory comes from a file (`generate --record FILE`) or from the conversation store (the app records
an answer's trajectory when recording is on): `replay CONVERSATION` takes a conversation id or its exact
title, `--message N` its N-th answer on the current path (default: the last one with a recording) and
`--revision R` one of its revisions (default: the current one). Every refusal is one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from engine.errors import InputError
from engine.recording.trajectory import Trajectory, decode

from .widgets.printable import flowing, unbroken
from .words import count, human

DESCRIPTION = """\
Replay a recorded denoising trajectory: print every step's canvas (settled positions as text, the rest as
░; a fill's given text in its place), one summary per block, or export the canvas resolving as an animated
SVG or GIF in the default theme's colours.

  diffusion-chat replay answer.traj                       a file written by `generate --record`
  diffusion-chat replay 3 --message 2 --export out.svg    conversation 3's second answer, from the store"""

UNSETTLED = "░"


# The largest trajectory file read (recordings are capped at 16 MiB per conversation by default).
MAX_FILE_BYTES = 64 << 20


class ReplayError(Exception):
    """A refusal, printed as one line."""


def replay_parser() -> argparse.ArgumentParser:
    from engine.cli.common import Parser, number

    parser = Parser(prog="diffusion-chat replay", description=DESCRIPTION,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", metavar="FILE|CONVERSATION",
                        help="a trajectory file, or a conversation's id or exact title in the conversation store")
    parser.add_argument("--message", type=number(int), metavar="N",
                        help="the conversation's N-th answer (1 = first; default: the last one with a recording)")
    parser.add_argument("--revision", type=number(int, 0), metavar="R",
                        help="the answer's revision R (default: the current one)")
    parser.add_argument("--blocks", action="store_true", help="print one summary per block instead of every step")
    parser.add_argument("--export", metavar="FILE", help="write an animated .svg or .gif of the canvas resolving")
    parser.add_argument("--width", type=number(int, 8, 1000), default=80, metavar="CELLS",
                        help="canvas width of an export (80)")
    parser.add_argument("--fps", type=number(float, 0.1, 1000), default=8.0,
                        help="denoising steps per second of an export (8)")
    return parser


def run_replay(argv: Sequence[str]) -> int:
    from engine.cli.common import fail

    args = replay_parser().parse_args(argv)
    try:
        trajectory = decode(load_source(args.source, args.message, args.revision))
        if not trajectory.frames:
            raise ReplayError("the trajectory has no denoising steps to replay")
        if args.export:
            export(trajectory, Path(args.export), args.width, args.fps)
            print(f"wrote {args.export} ({count(len(trajectory.frames), 'step')})", file=sys.stderr)
        else:
            print_replay(trajectory, blocks_only=args.blocks)
    except (ReplayError, InputError) as exc:
        return fail(str(exc))
    return 0


def load_source(source: str, message: int | None, revision: int | None) -> bytes:
    path = Path(source).expanduser()
    if path.is_file():
        if message is not None or revision is not None:
            raise ReplayError("--message and --revision choose an answer of a conversation, not of a file")
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                raise ReplayError(f"{source} is {size / 2**20:.0f} MiB; a trajectory file is at most "
                                  f"{MAX_FILE_BYTES >> 20} MiB")
            return path.read_bytes()
        except OSError as exc:
            raise ReplayError(f"cannot read {source}: {exc.strerror or exc}") from None
    return from_store(source, message, revision)


def from_store(source: str, message: int | None, revision: int | None, store=None) -> bytes:
    """The recording of one answer of a conversation (`store`: an open ConversationStore, else the default)."""
    from .store import ConversationStore, NotFoundError, StoreError, default_db_path

    if store is None:
        path = default_db_path()
        if not path.exists():
            raise ReplayError(f"{source!r} is not a file, and there is no conversation store at {path}")
        try:
            store = ConversationStore(path)
        except StoreError as exc:
            raise ReplayError(str(exc)) from None
    try:
        conversation = _conversation(store, source)
        answers = [m for m in conversation.messages if m.role == "assistant"]
        if not answers:
            raise ReplayError(f"conversation {conversation.id} has no answers")
        if message is not None:
            if not 1 <= message <= len(answers):
                raise ReplayError(f"conversation {conversation.id} has {len(answers)} answer(s); --message {message} "
                                  "is not one of them")
            candidates = [answers[message - 1]]
        else:
            candidates = answers[::-1]
        for answer in candidates:
            revisions = store.revisions(answer.id)
            wanted = [r for r in revisions if r.number == (revision if revision is not None else answer.revision)]
            if not wanted:
                raise ReplayError(f"answer {answers.index(answer) + 1} has no revision {revision}")
            data = store.load_trajectory(wanted[0].id)
            if data is not None:
                return data
        subject = f"answer {message}" if message is not None else "any answer"
        raise ReplayError(f"no recorded trajectory for {subject} of conversation {conversation.id} (recording was "
                          "off, or the size cap dropped it)")
    except (NotFoundError, StoreError) as exc:
        raise ReplayError(str(exc)) from None


def _conversation(store, source: str):
    from .store import NotFoundError

    if source.strip().isdigit():
        digits = source.strip()
        if len(digits) > 18:   # past SQLite's 64-bit ids (and Python's digit limit): no such conversation
            raise NotFoundError(f"no conversation with id {digits[:20]}{'...' if len(digits) > 20 else ''}")
        return store.get(int(digits))
    matches = [c for c in store.list() if c.title == source.strip()]
    if len(matches) != 1:
        raise NotFoundError(f"no conversation or file named {source!r}" if not matches else
                            f"{len(matches)} conversations are titled {source!r}: give its id")
    return store.get(matches[0].id)


def canvas_text(trajectory: Trajectory, index: int) -> str:
    """One step's canvas as one line of plain text: settled positions (and a fill's given text) as their text,
    the rest as ░."""
    frame = trajectory.frames[index]
    shown = []
    for position in range(frame.prompt_positions, len(frame.canvas)):
        if frame.accepted[position]:
            text = trajectory.token_text(int(frame.canvas[position]))
            shown.append(unbroken(text) if text is not None else UNSETTLED)
        else:
            shown.append(UNSETTLED)
    return "".join(shown)


def print_replay(trajectory: Trajectory, blocks_only: bool = False, out=None) -> None:
    out = out or sys.stdout
    meta = trajectory.meta
    settings = ", ".join(f"{k}={v}" for k, v in sorted(meta.get("settings", {}).items())) or "checkpoint defaults"
    print(f"{meta.get('model', '?')} ({meta.get('family', '?')}) · {meta.get('prompt_tokens', '?')} prompt tokens · "
          f"seed {meta.get('seed', '?')} · {settings}", file=out)
    records = {b.block: b for b in trajectory.blocks}
    for index, frame in enumerate(trajectory.frames):
        if not blocks_only:
            edits = int(frame.edited.sum()) if frame.edited is not None else 0
            note = f" ~{edits}" if edits else ""
            print(f"b{frame.block + 1} s{frame.step + 1:>2}/{frame.max_steps} +{frame.newly_accepted:<3}{note} "
                  f"{canvas_text(trajectory, index)}", file=out)
        last = index + 1 == len(trajectory.frames) or trajectory.frames[index + 1].block != frame.block
        if last and frame.block in records:
            record = records[frame.block]
            edits = f", {count(record.edits, 'edit')}" if record.edits else ""
            print(f"block {record.block + 1}: {count(record.steps, 'step')}, {human(record.stop_reason)}{edits}: "
                  f"{record.content_delta!r}", file=out)
    if "finish_reason" in meta:
        print(f"finished: {meta['finish_reason']} · {len(meta.get('token_ids', []))} tokens", file=out)
        print(flowing(meta.get("content", "")), file=out)


def export(trajectory: Trajectory, path: Path, width: int, fps: float) -> None:
    from .replay_export import write_gif, write_svg

    suffix = path.suffix.lower()
    if suffix not in (".svg", ".gif"):
        raise ReplayError(f"--export writes .svg or .gif files, not {suffix or 'a file without a suffix'}")
    try:
        (write_svg if suffix == ".svg" else write_gif)(trajectory, path, width=width, fps=fps)
    except OSError as exc:
        raise ReplayError(f"cannot write {path}: {exc.strerror or exc}") from None
