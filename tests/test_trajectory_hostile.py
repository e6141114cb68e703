"""Trajectory files are input: every corrupt file below (made here from a good one) is one precise line from
`decode` and from `diffusion-chat replay`, the three tiny files that used to exhaust memory (an LZMA bomb,
an npz member declaring 10^13 elements, 200,000 frames × 50,000 positions) are refused within a bounded
RSS, `replay ID` with a 31-digit id is one line, and `replay FILE | head -2` ends quietly."""

from __future__ import annotations

import dataclasses
import io
import json
import lzma
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from engine.errors import InputError
from engine.events import Step
from engine.recording.trajectory import MAGIC, BlockRecord, Trajectory, decode, encode
from engine.recording.reader import MAX_INFLATED_BYTES
from tui.cli import main

ROOT = Path(__file__).resolve().parents[1]


def good() -> Trajectory:
    frames = [Step(block=b, step=s, max_steps=4, canvas=np.arange(8, dtype=np.int32) + s,
                   candidates=np.arange(8, dtype=np.int32), accepted=np.arange(8) < 2 * (s + 1),
                   newly_accepted=2, scores=np.linspace(0, 1, 8, dtype=np.float32), score_kind="entropy",
                   temperature=0.5, noise_is_mask=False, fixed=np.arange(8) < 1 if b == 0 else None)
              for b in range(2) for s in range(4)]
    blocks = [BlockRecord(b, 4, "all_positions_revealed", 0, tuple(range(8)), tuple(range(8)), f"block {b} ")
              for b in range(2)]
    return Trajectory({"family": "diffusion_gemma", "model": "m", "settings": {"seed": 1}}, frames, blocks,
                      [1, 2, 3], {0: np.arange(8, dtype=np.int32)}, {}, None, {i: f"t{i}" for i in range(16)})


GOOD = encode(good())


def parts() -> tuple[dict[str, np.ndarray], dict]:
    with np.load(io.BytesIO(lzma.decompress(GOOD[len(MAGIC):]))) as npz:
        arrays = {name: npz[name] for name in npz.files}
    return arrays, json.loads(arrays.pop("header").tobytes())


def packed(arrays: dict, header=None, raw_header: bytes | None = None) -> bytes:
    arrays = dict(arrays)
    if raw_header is not None or header is not None:
        text = raw_header if raw_header is not None else json.dumps(header).encode()
        arrays["header"] = np.frombuffer(text, np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return MAGIC + lzma.compress(buffer.getvalue(), preset=0)


def changed(arrays=lambda a: None, header=lambda h: None, raw_header: bytes | None = None) -> bytes:
    found_arrays, found_header = parts()
    arrays(found_arrays)
    header(found_header)
    return packed(found_arrays, found_header, raw_header)


def setter(key, value):
    return lambda d: d.__setitem__(key, value)


def frame_column(column: int, value: int):
    def change(arrays):
        ints = arrays["frame_ints"].copy()
        ints[0, column] = value
        arrays["frame_ints"] = ints
    return change


def declaring(name: str, shape: tuple, dtype: str = "<i4") -> bytes:
    """An npz whose `name` member's header declares `shape` over 8 bytes of data."""
    arrays, header = parts()
    buffer = io.BytesIO()
    np.savez(buffer, **{k: v for k, v in arrays.items() if k != name}, header=np.frombuffer(json.dumps(header).encode(), np.uint8))
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": dtype, "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr(f"{name}.npy", member.getvalue() + b"\0" * 8)
    return MAGIC + lzma.compress(buffer.getvalue(), preset=0)


CASES = {
    "empty file": (lambda: b"", "does not start like one"),
    "only the magic": (lambda: MAGIC, "cut short"),
    "truncated stream": (lambda: GOOD[:len(GOOD) // 2], "cut short"),
    "not lzma": (lambda: MAGIC + b"garbage" * 10, "damaged"),
    "lzma of junk": (lambda: MAGIC + lzma.compress(b"junk"), "damaged"),
    "missing frame_ints": (lambda: changed(arrays=lambda a: a.pop("frame_ints")), "lacks its frame_ints"),
    "missing header": (lambda: packed({k: v for k, v in parts()[0].items()}), "lacks its header"),
    "header a JSON list": (lambda: changed(raw_header=b"[1, 2]"), "header is a JSON list, not an object"),
    "header not JSON": (lambda: changed(raw_header=b"{nope"), "header is not JSON"),
    "header not UTF-8": (lambda: changed(raw_header=b"\xff\xfe{}"), "header is not JSON"),
    "header nested deep": (lambda: changed(raw_header=b"[" * 20000 + b"]" * 20000), "levels deep"),
    "version 2": (lambda: changed(header=setter("version", 2)), "format 2 is not one this version reads"),
    "meta missing": (lambda: changed(header=lambda h: h.pop("meta")), "meta is not an object"),
    "meta settings a list": (lambda: changed(header=lambda h: h["meta"].__setitem__("settings", [1])),
                             "meta's settings is not a dict"),
    "block of 6 fields": (lambda: changed(header=lambda h: h["blocks"][0].pop()), "not a list of 7 fields"),
    "block ids strings": (lambda: changed(header=lambda h: h["blocks"][0].__setitem__(4, ["a"])),
                          "token ids are not integers"),
    "score kind": (lambda: changed(header=setter("score_kind", "vibes")), "score_kind"),
    "texts key": (lambda: changed(header=lambda h: h["texts"].__setitem__("x", "y")), "texts do not map"),
    "frame_ints rank 1": (lambda: changed(arrays=lambda a: a.__setitem__("frame_ints", a["frame_ints"].reshape(-1))),
                          "frame_ints array is <i4 of rank 1"),
    "frame_ints width 7": (lambda: changed(arrays=lambda a: a.__setitem__("frame_ints", a["frame_ints"][:, :7].copy())),
                           "has 7 columns"),
    "negative length": (lambda: changed(arrays=frame_column(3, -8)), "negative"),
    "negative block": (lambda: changed(arrays=frame_column(0, -1)), "negative block"),
    "too many accepted": (lambda: changed(arrays=frame_column(4, 99)), "more accepted"),
    "flag 2": (lambda: changed(arrays=frame_column(6, 2)), "flags not 0/1"),
    "canvas 3 planes": (lambda: changed(arrays=lambda a: a.__setitem__("canvas", a["canvas"][:3].copy())),
                        "canvas array has shape"),
    "candidates short": (lambda: changed(arrays=lambda a: a.__setitem__("candidates", a["candidates"][:, :5].copy())),
                         "candidates array has shape"),
    "scores float32": (lambda: changed(arrays=lambda a: a.__setitem__("scores", np.zeros(64, np.float32))),
                       "scores array is <f4"),
    "accepted short": (lambda: changed(arrays=lambda a: a.__setitem__("accepted", a["accepted"][:2].copy())),
                       "accepted array has shape"),
    "temperature long": (lambda: changed(arrays=lambda a: a.__setitem__("temperature", np.zeros(99, np.float32))),
                         "temperature array has shape"),
    "object array": (lambda: changed(arrays=lambda a: a.__setitem__("prompt_ids", np.array([1, "x"], object))),
                     "prompt_ids array is |O"),
    "unknown member": (lambda: changed(arrays=setter("evil", np.zeros(3, np.int32))), "unknown array 'evil'"),
    "fill ids alone": (lambda: changed(arrays=setter("fill_ids", np.zeros(3, np.int32))), "fill_hole"),
    "proposal float": (lambda: changed(arrays=setter("proposal_0_1", np.zeros(3, np.float64))),
                       "proposal_0_1 array is <f8"),
    "member declaring 10^13 elements": (lambda: declaring("prompt_ids", (10**13,)), "declares 10000000000000 elements"),
    "200,000 frames x 50,000 positions": (
        lambda: changed(arrays=setter("frame_ints", np.tile(np.array([[0, 0, 1, 50_000, 0, 0, 0, 0]], np.int32),
                                                            (200_000, 1)))),
        "hold 10000000000 positions"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_corrupt_file_is_one_precise_line(name):
    make, words = CASES[name]
    with pytest.raises(InputError) as refused:
        decode(make())
    message = str(refused.value)
    assert words in message and "\n" not in message and len(message) < 200, message


def test_the_good_file_still_decodes_whole():
    again = decode(GOOD)
    original = good()
    assert len(again.frames) == len(original.frames) and again.token_texts == original.token_texts
    for a, b in zip(again.frames, original.frames):
        assert (a.canvas == b.canvas).all() and (a.accepted == b.accepted).all() and a.block == b.block
    assert again.blocks == original.blocks and again.frames[0].fixed is not None and again.frames[4].fixed is None


def test_the_memory_eaters_are_refused_within_a_bounded_rss(tmp_path):
    """In a fresh process: an LZMA member inflating to 3 GiB, a member declaring 10^13 elements and 200,000
    frames × 50,000 positions; its peak RSS stays far below what any of them asks for."""
    bomb = lzma.LZMACompressor(preset=0)
    pieces = [bomb.compress(b"\0" * (1 << 20)) for _ in range((MAX_INFLATED_BYTES >> 20) + 8)]
    files = {"bomb": MAGIC + b"".join(pieces) + bomb.flush(),
             "declared": CASES["member declaring 10^13 elements"][0](),
             "frames": CASES["200,000 frames x 50,000 positions"][0]()}
    for name, data in files.items():
        (tmp_path / f"{name}.traj").write_bytes(data)
    # The child's own peak: VmHWM belongs to its address space, which exec makes new. Not getrusage's ru_maxrss:
    # Linux carries the forking parent's high-water mark across fork and exec, so late in a full run the child
    # "peaked" at pytest's own 800-1,000 MiB (a fresh-clone CI run failed at 1,026).
    script = ("import sys\nfrom engine.recording.trajectory import decode\nfrom engine.errors import InputError\n"
              "for path in sys.argv[1:]:\n    try:\n        decode(open(path, 'rb').read())\n"
              "    except InputError as e:\n        print(e)\n"
              "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')))\n")
    done = subprocess.run([sys.executable, "-c", script, *(str(tmp_path / f"{n}.traj") for n in files)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, done.stderr
    assert "inflates past 128 MiB" in lines[0] and "declares 10000000000000" in lines[1] and "positions" in lines[2]
    # ~288 MiB (the 128 MiB ceiling and its copy): far below the 3.2 GB the bomb took.
    assert int(lines[3]) < 512 * 1024, f"peak RSS {int(lines[3]) >> 10} MiB"   # KiB


def test_replay_refuses_corrupt_files_and_a_huge_id_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DIFFUSION_CHAT_DATA_DIR", str(tmp_path))
    from tui.store import ConversationStore, default_db_path
    ConversationStore(default_db_path()).close()   # a store exists: the id is looked up in it
    for name in ("header a JSON list", "missing frame_ints", "frame_ints width 7", "member declaring 10^13 elements"):
        path = tmp_path / "bad.traj"
        path.write_bytes(CASES[name][0]())
        assert main(["replay", str(path)]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("diffusion-chat: error: the trajectory") and "unexpected" not in err, err
        assert len(err.splitlines()) == 1
    assert main(["replay", "1" + "0" * 30]) == 1
    err = capsys.readouterr().err.strip()
    assert "no conversation with id 1000000000000000000" in err and "Overflow" not in err, err


def test_replay_into_head_ends_quietly(tmp_path):
    """Far more lines than a pipe buffers, so `head` closes the pipe while replay still prints."""
    long = good()
    long.frames = [dataclasses.replace(f, block=0, step=i % 4) for i in range(4000) for f in long.frames[:1]]
    path = tmp_path / "long.traj"
    path.write_bytes(encode(long))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(f"{sys.executable} -m tui.cli replay {path} | head -2", shell=True, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert len(done.stdout.splitlines()) == 2 and done.stderr == "" and done.returncode == 0, done.stderr
