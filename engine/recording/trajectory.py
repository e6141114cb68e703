"""Recorded denoising trajectories: every `Step` of a generation, compact, with what replaying it needs.

A trajectory holds, per step, the canvas ids, the model's candidates, the accepted mask, the scores (float16)
and a fill's fixed / LLaDA-2.1's edited masks; per block its committed ids, emitted ids, text and stop
reason; and the request (prompt ids, settings, a fill's template, family, model, seed). Encoded it is one
LZMA stream over an uncompressed npz (`encode` / `decode`; 13% smaller than zlib here), with canvases and
candidates XOR-coded against the previous step of their block (what stays put becomes zeros) and every
array's bytes grouped by significance (ids and float16 scores differ mostly in their low bytes).

Which random draws a replay needs, and why they are all here (engine.recording.replay serves them):
* DiffusionGemma: the canvas after step k is where(accepted, proposal, renoise), and the proposal is read only
  where accepted, the renoise draw only elsewhere, so the recorded canvas *is* both draws wherever they
  matter; the block's initial noise is recorded separately (`initial`). The confidence-threshold sampler also
  reads the proposals' probabilities where nothing was revealed, so a sampled run of it keeps its proposals.
* LLaDA-2: the sampled candidate x0 of every position is the draw (`candidates`), kept anyway.

`token_texts` maps the ids a viewer draws as text (settled canvas positions, candidates, committed ids) to
their text, so a trajectory replays and exports without the model.

Plain Python and NumPy, no MLX (an app decodes trajectories on its own thread).
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InputError
from ..events import BlockCommitted, Finished, Step

MAGIC = b"diffusion-chat trajectory\n"
VERSION = 1


@dataclass(frozen=True)
class BlockRecord:
    block: int
    steps: int
    stop_reason: str
    edits: int
    committed: tuple[int, ...]
    token_ids: tuple[int, ...]
    content_delta: str


@dataclass
class Trajectory:
    meta: dict[str, Any]                       # family, model, settings, seed, prompt_sha256, ... (see record)
    frames: list[Step]
    blocks: list[BlockRecord]
    prompt_ids: list[int] = field(default_factory=list)
    initial: dict[int, np.ndarray] = field(default_factory=dict)     # block -> its initial noise (DiffusionGemma)
    proposals: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)   # (block, step) -> sampled ids
    fill: tuple[np.ndarray, np.ndarray] | None = None   # the template as positions (ids, hole index)
    token_texts: dict[int, str] = field(default_factory=dict)

    def token_text(self, token_id: int) -> str | None:
        return self.token_texts.get(int(token_id))


class TrajectoryRecorder:
    """Collects one generation: `step` every Step, `block` every BlockCommitted, `initial` / `proposal` the draws
    a RecordingRandomness hands it, then `encode` with the Finished event."""

    def __init__(self, meta: dict[str, Any], prompt_ids: Sequence[int], fill=None):
        self.meta = dict(meta)
        self.prompt_ids = [int(t) for t in prompt_ids]
        self.fill = fill
        self.frames: list[Step] = []
        self.blocks: list[BlockRecord] = []
        self.initial: dict[int, np.ndarray] = {}
        self.proposals: dict[tuple[int, int], np.ndarray] = {}

    def step(self, step: Step) -> None:
        self.frames.append(step)  # a Step's arrays are its own (the denoisers never reuse them)

    def block(self, event: BlockCommitted) -> None:
        self.blocks.append(BlockRecord(event.block, event.steps, event.stop_reason, event.edits, event.committed,
                                       event.token_ids, event.content_delta))

    def draw(self, kind: str, block: int, step: int, ids) -> None:
        """A random draw ("initial" noise of a block, or a sampled "proposal"), in any array type NumPy reads; it
        is read only when the trajectory is encoded, so recording never waits for a lazy computation."""
        if kind == "initial":
            self.initial[block] = ids
        else:
            self.proposals[(block, step)] = ids

    def trajectory(self, finished: Finished | None, token_text: Callable[[int], str] | None) -> Trajectory:
        meta = dict(self.meta, prompt_tokens=len(self.prompt_ids),
                    prompt_sha256=hashlib.sha256(np.asarray(self.prompt_ids, np.int32).tobytes()).hexdigest())
        if finished is not None:
            meta.update(finish_reason=finished.finish_reason, content=finished.content,
                        filled_spans=[list(s) for s in finished.filled_spans], token_ids=list(finished.token_ids))
        texts = {}
        if token_text is not None:
            shown: set[int] = set()
            for f in self.frames:
                shown.update(f.candidates.tolist(), f.canvas[f.accepted].tolist())
            for b in self.blocks:
                shown.update(b.committed)
            texts = {i: token_text(i) for i in sorted(shown)}
        def flat(ids) -> np.ndarray:
            return np.asarray(ids).astype(np.int32).reshape(-1)

        return Trajectory(meta, list(self.frames), list(self.blocks), list(self.prompt_ids),
                          {b: flat(ids) for b, ids in self.initial.items()},
                          {k: flat(ids) for k, ids in self.proposals.items()}, self.fill, texts)

    def encode(self, finished: Finished | None, token_text: Callable[[int], str] | None = None) -> bytes:
        return encode(self.trajectory(finished, token_text))


# ---- bytes ------------------------------------------------------------------------------------------------


def _xor_within_blocks(rows: list[np.ndarray], blocks: list[int]) -> np.ndarray:
    out, previous = [], {}
    for row, block in zip(rows, blocks):
        before = previous.get(block)
        out.append(row ^ before if before is not None and len(before) == len(row) else row)
        previous[block] = row
    return np.concatenate(out) if out else np.zeros(0, np.int32)


def _unxor_within_blocks(flat: np.ndarray, lengths: list[int], blocks: list[int]) -> list[np.ndarray]:
    rows, previous, start = [], {}, 0
    for length, block in zip(lengths, blocks):
        row = flat[start:start + length]
        before = previous.get(block)
        row = row ^ before if before is not None and len(before) == length else row.copy()
        rows.append(row)
        previous[block] = row
        start += length
    return rows


def _planes(values: np.ndarray) -> np.ndarray:
    """The bytes of `values` regrouped by significance (all first bytes, then all second bytes, ...): token ids
    and float16 scores vary mostly in their low bytes, and grouped that way the compressor finds the runs."""
    return np.ascontiguousarray(values.view(np.uint8).reshape(-1, values.dtype.itemsize).T)


def _unplanes(planes: np.ndarray, dtype) -> np.ndarray:
    return np.ascontiguousarray(planes.T).view(dtype).reshape(-1)


def _bits(masks: list[np.ndarray]) -> np.ndarray:
    return np.packbits(np.concatenate(masks).astype(bool)) if masks else np.zeros(0, np.uint8)


def _unbits(packed: np.ndarray, total: int) -> np.ndarray:
    return np.unpackbits(packed, count=total).astype(bool)


def encode(trajectory: Trajectory) -> bytes:
    frames = trajectory.frames
    blocks = [f.block for f in frames]
    arrays: dict[str, np.ndarray] = {
        "frame_ints": np.array([[f.block, f.step, f.max_steps, len(f.canvas), f.newly_accepted, f.prompt_positions,
                                 f.fixed is not None, f.edited is not None] for f in frames], np.int32).reshape(-1, 8),
        "temperature": np.array([np.nan if f.temperature is None else f.temperature for f in frames], np.float32),
        "canvas": _planes(_xor_within_blocks([f.canvas.astype(np.int32) for f in frames], blocks)),
        "candidates": _planes(_xor_within_blocks([f.candidates.astype(np.int32) for f in frames], blocks)),
        "accepted": _bits([f.accepted for f in frames]),
        "scores": _planes(np.concatenate([f.scores for f in frames]).astype(np.float16) if frames
                          else np.zeros(0, np.float16)),
        "fixed": _bits([f.fixed for f in frames if f.fixed is not None]),
        "edited": _bits([f.edited for f in frames if f.edited is not None]),
        "prompt_ids": np.asarray(trajectory.prompt_ids, np.int32),
    }
    for block, ids in trajectory.initial.items():
        arrays[f"initial_{block}"] = ids
    for (block, step), ids in trajectory.proposals.items():
        arrays[f"proposal_{block}_{step}"] = ids
    if trajectory.fill is not None:
        arrays["fill_ids"], arrays["fill_hole"] = (np.asarray(a, np.int32) for a in trajectory.fill)
    header = {
        "version": VERSION, "meta": trajectory.meta,
        "score_kind": frames[0].score_kind if frames else "entropy",
        "noise_is_mask": bool(frames[0].noise_is_mask) if frames else False,
        "blocks": [[b.block, b.steps, b.stop_reason, b.edits, list(b.committed), list(b.token_ids), b.content_delta]
                   for b in trajectory.blocks],
        "texts": {str(k): v for k, v in trajectory.token_texts.items()},
    }
    arrays["header"] = np.frombuffer(json.dumps(header, ensure_ascii=False).encode(), np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return MAGIC + lzma.compress(buffer.getvalue(), preset=6)


def decode(data: bytes) -> Trajectory:
    """The trajectory in `data`; one-line InputError for anything else (engine.recording.reader checks the
    schema and every declared size before anything is allocated from it)."""
    from . import reader

    if not isinstance(data, (bytes, bytearray, memoryview)) or not bytes(data[:len(MAGIC)]) == MAGIC:
        raise InputError("not a diffusion-chat trajectory (it does not start like one)")
    arrays = reader.members(reader.inflate(bytes(data[len(MAGIC):])))
    header = reader.header(arrays, VERSION)
    ints, lengths = reader.frame_layout(arrays)
    blocks = ints[:, 0].tolist()
    canvases = _unxor_within_blocks(_unplanes(arrays["canvas"], np.int32), lengths, blocks)
    candidates = _unxor_within_blocks(_unplanes(arrays["candidates"], np.int32), lengths, blocks)
    total = sum(lengths)
    accepted = np.split(_unbits(arrays["accepted"], total), np.cumsum(lengths)[:-1]) if lengths else []
    scores = _unplanes(arrays["scores"], np.float16).astype(np.float32)
    scores = np.split(scores, np.cumsum(lengths)[:-1]) if lengths else []
    optional = {}
    for name, column in (("fixed", 6), ("edited", 7)):
        sizes = [n for n, has in zip(lengths, ints[:, column]) if has]
        rows = iter(np.split(_unbits(arrays[name], sum(sizes)), np.cumsum(sizes)[:-1]) if sizes else [])
        optional[name] = [next(rows) if has else None for has in ints[:, column]]
    frames = [
        Step(block=int(r[0]), step=int(r[1]), max_steps=int(r[2]), canvas=canvases[i], candidates=candidates[i],
             accepted=accepted[i], newly_accepted=int(r[4]), scores=scores[i], score_kind=header["score_kind"],
             temperature=None if np.isnan(arrays["temperature"][i]) else float(arrays["temperature"][i]),
             noise_is_mask=header["noise_is_mask"], prompt_positions=int(r[5]), fixed=optional["fixed"][i],
             edited=optional["edited"][i])
        for i, r in enumerate(ints)
    ]
    records = [BlockRecord(b, steps, reason, edits, tuple(committed), tuple(tokens), delta)
               for b, steps, reason, edits, committed, tokens, delta in header["blocks"]]
    initial = {int(k.split("_")[1]): v for k, v in arrays.items() if k.startswith("initial_")}
    proposals = {(int(k.split("_")[1]), int(k.split("_")[2])): v for k, v in arrays.items() if k.startswith("proposal_")}
    fill = (arrays["fill_ids"], arrays["fill_hole"]) if "fill_ids" in arrays else None
    return Trajectory(header["meta"], frames, records, arrays["prompt_ids"].tolist(), initial, proposals, fill,
                      {int(k): v for k, v in header["texts"].items()})
