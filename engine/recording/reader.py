"""Reading a trajectory file (engine.recording.trajectory's format) as the untrusted input it is.

Everything is checked before it is allocated: the LZMA stream may inflate to at most `MAX_INFLATED_BYTES`
(read with a ceiling, never whole), every `.npz` member's header must declare a dtype and shape that its
stored bytes actually hold (a member declaring 10^13 elements is refused before NumPy sizes a buffer from
it), every array must have the rank, width and length the header and `frame_ints` imply, and the positions
of all frames together are capped (`MAX_POSITIONS`), so 200,000 frames × 50,000 positions is one refusal,
not an exhausted machine. Each refusal is one `InputError` line naming what was wrong.

So decoding any file holds at most the inflated npz (≤ 128 MiB) plus its decoded frames (≤ 8 M positions,
≈ 13 bytes each): well under 512 MiB.
"""

from __future__ import annotations

import io
import lzma
import re
import zipfile
from typing import Any

import numpy as np

from ..io import bounded_json
from ..errors import InputError

MAX_INFLATED_BYTES = 128 << 20
MAX_POSITIONS = 8 << 20           # all frames' canvases together
MAX_FRAME_POSITIONS = 1 << 16     # one frame's canvas
MAX_FRAMES = 1 << 20
MAX_MEMBERS = MAX_FRAMES + 16

# member name -> (dtype, rank); `None` rank checks are done from the header below
FIXED_MEMBERS = {"frame_ints": ("<i4", 2), "temperature": ("<f4", 1), "canvas": ("|u1", 2),
                 "candidates": ("|u1", 2), "accepted": ("|u1", 1), "scores": ("|u1", 2), "fixed": ("|u1", 1),
                 "edited": ("|u1", 1), "prompt_ids": ("<i4", 1), "header": ("|u1", 1), "fill_ids": ("<i4", 1),
                 "fill_hole": ("<i4", 1)}
DRAW_MEMBER = re.compile(r"(initial_\d{1,9}|proposal_\d{1,9}_\d{1,9})")
REQUIRED = ("frame_ints", "temperature", "canvas", "candidates", "accepted", "scores", "fixed", "edited",
            "prompt_ids", "header")


def inflate(compressed: bytes) -> bytes:
    """The LZMA stream's content, refused past MAX_INFLATED_BYTES (a bomb stops at the ceiling)."""
    decompressor = lzma.LZMADecompressor()
    try:
        inflated = decompressor.decompress(compressed, max_length=MAX_INFLATED_BYTES + 1)
    except lzma.LZMAError as exc:
        raise InputError(f"the trajectory is damaged: {exc}") from None
    if len(inflated) > MAX_INFLATED_BYTES:
        raise InputError(f"the trajectory inflates past {MAX_INFLATED_BYTES >> 20} MiB (the most a replay reads)")
    if not decompressor.eof:
        raise InputError("the trajectory is damaged: its compressed stream is cut short")
    return inflated


def members(inflated: bytes) -> dict[str, np.ndarray]:
    """Every array of the npz, each checked against its own declared dtype and shape first."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(inflated))
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise InputError(f"the trajectory is damaged: {exc}") from None
    if len(infos) > MAX_MEMBERS:
        raise InputError(f"the trajectory has {len(infos)} arrays (at most {MAX_MEMBERS})")
    if sum(info.file_size for info in infos) > MAX_INFLATED_BYTES:
        raise InputError(f"the trajectory's arrays declare more than {MAX_INFLATED_BYTES >> 20} MiB")
    arrays = {}
    for info in infos:
        name = info.filename.removesuffix(".npy")
        expected = FIXED_MEMBERS.get(name) or (("<i4", 1) if DRAW_MEMBER.fullmatch(name) else None)
        if expected is None:
            raise InputError(f"the trajectory has an unknown array {name[:40]!r}")
        arrays[name] = _member(archive, info, name, *expected)
    missing = [name for name in REQUIRED if name not in arrays]
    if missing:
        raise InputError(f"the trajectory lacks its {', '.join(missing)} array(s)")
    return arrays


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, dtype: str, rank: int) -> np.ndarray:
    try:
        with archive.open(info) as stream:
            version = np.lib.format.read_magic(stream)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, fortran, declared = read_header(stream, max_header_size=10_000)
            if declared.str != dtype or len(shape) != rank or fortran:
                raise InputError(f"the trajectory's {name} array is {declared.str} of rank {len(shape)} "
                                 f"(expected {dtype} of rank {rank})")
            count = int(np.prod(shape, dtype=object))
            payload = info.file_size - stream.tell()
            if count * declared.itemsize != payload:
                raise InputError(f"the trajectory's {name} array declares {count} elements but holds "
                                 f"{max(payload, 0) // declared.itemsize}")
            data = bytearray(payload)     # writable, as np.load's arrays are
            if stream.readinto(data) != payload:
                raise InputError(f"the trajectory's {name} array is cut short")
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, SyntaxError) as exc:
        raise InputError(f"the trajectory's {name} array is damaged: {str(exc).splitlines()[0][:120]}") from None
    return np.frombuffer(data, dtype=declared).reshape(shape)


def header(arrays: dict[str, np.ndarray], version: int) -> dict[str, Any]:
    try:
        text = arrays.pop("header").tobytes().decode("utf-8")
        found = bounded_json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"the trajectory's header is not JSON: {str(exc).splitlines()[0][:120]}") from None
    if not isinstance(found, dict):
        raise InputError(f"the trajectory's header is a JSON {type(found).__name__}, not an object")
    if found.get("version") != version:
        raise InputError(f"trajectory format {str(found.get('version'))[:20]} is not one this version reads "
                         f"({version})")
    meta = found.get("meta")
    _check(isinstance(meta, dict), "its meta is not an object")
    for key, kind in (("settings", dict), ("token_ids", list), ("content", str), ("filled_spans", list),
                      ("finish_reason", str)):
        _check(key not in meta or isinstance(meta[key], kind), f"its meta's {key} is not a {kind.__name__}")
    _check(found.get("score_kind") in ("entropy", "confidence"), "its score_kind is neither entropy nor confidence")
    _check(isinstance(found.get("noise_is_mask"), bool), "its noise_is_mask is not true or false")
    _check(isinstance(found.get("blocks"), list), "its blocks are not a list")
    for entry in found["blocks"]:
        _check(isinstance(entry, list) and len(entry) == 7, "a block record is not a list of 7 fields")
        block, steps, reason, edits, committed, tokens, delta = entry
        _check(all(_is_count(v) for v in (block, steps, edits)), "a block record's numbers are not counts")
        _check(isinstance(reason, str) and isinstance(delta, str), "a block record's texts are not strings")
        _check(all(isinstance(ids, list) and all(_is_id(t) for t in ids) for ids in (committed, tokens)),
               "a block record's token ids are not integers")
    texts = found.get("texts")
    _check(isinstance(texts, dict) and all(k.isdigit() and len(k) < 12 and isinstance(v, str)
                                           for k, v in texts.items()), "its texts do not map token ids to text")
    return found


def frame_layout(arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, list[int]]:
    """`frame_ints` checked (ranges of each column) and the canvas length of every frame."""
    ints = arrays["frame_ints"]
    frames = len(ints)
    _array(ints.shape[1] == 8, "frame_ints", f"has {ints.shape[1]} columns (expected 8)")
    _array(frames <= MAX_FRAMES, "frame_ints", f"has {frames} frames (at most {MAX_FRAMES})")
    if frames:
        block, step, max_steps, length, newly, prompt, fixed, edited = ints.T.astype(np.int64)
        _array((block >= 0).all() and (step >= 0).all() and (max_steps >= 1).all(), "frame_ints",
               "has a negative block or step")
        _array(((length >= 0) & (length <= MAX_FRAME_POSITIONS)).all(), "frame_ints",
               f"has a canvas longer than {MAX_FRAME_POSITIONS} or negative")
        _array(((newly >= 0) & (newly <= length) & (prompt >= 0) & (prompt <= length)).all(), "frame_ints",
               "counts more accepted or prompt positions than the canvas has")
        _array(np.isin(fixed, (0, 1)).all() and np.isin(edited, (0, 1)).all(), "frame_ints", "has flags not 0/1")
    lengths = ints[:, 3].astype(np.int64)
    total = int(lengths.sum())
    if total > MAX_POSITIONS:
        raise InputError(f"the trajectory's frames hold {total} positions (at most {MAX_POSITIONS} are replayed)")
    _shape(arrays, "temperature", (frames,))
    for name, width in (("canvas", 4), ("candidates", 4), ("scores", 2)):
        _shape(arrays, name, (width, total))
    _shape(arrays, "accepted", (-(-total // 8),))
    for name, column in (("fixed", 6), ("edited", 7)):
        _shape(arrays, name, (-(-int(lengths[ints[:, column] == 1].sum()) // 8),))
    _array(("fill_ids" in arrays) == ("fill_hole" in arrays) and
           ("fill_ids" not in arrays or arrays["fill_ids"].shape == arrays["fill_hole"].shape), "fill_ids",
           "and fill_hole do not come as a pair of one length")
    return ints, lengths.tolist()


def _shape(arrays, name: str, shape: tuple[int, ...]) -> None:
    _array(arrays[name].shape == shape, name, f"has shape {arrays[name].shape} (expected {shape})")


def _array(ok: bool, name: str, problem: str) -> None:
    if not ok:
        raise InputError(f"the trajectory's {name} array {problem}")


def _check(ok: bool, problem: str) -> None:
    if not ok:
        raise InputError(f"the trajectory's header is wrong: {problem}")


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 40


def _is_id(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -(1 << 31) <= value < 1 << 31
