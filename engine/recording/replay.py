"""Recording a generation's random draws, and replaying a recorded trajectory through the engine.

`RecordingRandomness` wraps the randomness of a generation run with `engine.generate(record=True)` and hands
the draws a replay needs to the `TrajectoryRecorder` (see engine.recording.trajectory for which ones). A
`ReplayRandomness` serves them back, so `replay(model, trajectory)` — the same prompt ids, settings and
template with the recorded draws — yields the same tokens: a trajectory is also a bug report.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from ..errors import InputError
from ..events import Event
from ..generation.fill import FillTemplate, Given, Hole
from ..settings import Settings
from .trajectory import Trajectory, TrajectoryRecorder


class RecordingRandomness:
    """Passes every draw through and tells the recorder the ones the recorded steps do not already hold: each
    block's initial noise, and the proposals when `keep_proposals` (DiffusionGemma's confidence-threshold
    sampler reads proposals where nothing is revealed)."""

    def __init__(self, inner, recorder: TrajectoryRecorder):
        self.inner, self.recorder = inner, recorder
        self.keep_proposals = False

    def tokens(self, count: int, *, block: int, step: int) -> np.ndarray:
        ids = self.inner.tokens(count, block=block, step=step)
        if step == -1:
            self.recorder.draw("initial", block, step, ids)
        return ids

    def proposals(self, count: int, *, block: int, step: int) -> np.ndarray | None:
        ids = self.inner.proposals(count, block=block, step=step)
        if ids is not None:
            self.sampled(ids, block=block, step=step)
        return ids

    def uniform(self, count: int, *, block: int, step: int) -> np.ndarray:
        return self.inner.uniform(count, block=block, step=step)

    def sampled(self, ids: np.ndarray, *, block: int, step: int) -> None:
        self.inner.sampled(ids, block=block, step=step)
        if self.keep_proposals:
            self.recorder.draw("proposal", block, step, ids)


class ReplayRandomness:
    """The recorded draws of a trajectory, by (block, step)."""

    def __init__(self, trajectory: Trajectory):
        self.trajectory = trajectory
        self.frames = {(f.block, f.step): f for f in trajectory.frames}
        self.sampled_candidates = trajectory.meta.get("family") == "llada2_moe"

    def _frame(self, block: int, step: int):
        frame = self.frames.get((block, step))
        if frame is None:
            raise InputError(f"the trajectory has no step {step + 1} of block {block + 1} to replay")
        return frame

    def tokens(self, count: int, *, block: int, step: int) -> np.ndarray:
        ids = self.trajectory.initial.get(block) if step == -1 else self._frame(block, step).canvas
        if ids is None:
            raise InputError(f"the trajectory has no initial canvas of block {block + 1}")
        return np.asarray(ids, np.int32).reshape(count)

    def proposals(self, count: int, *, block: int, step: int) -> np.ndarray:
        proposal = self.trajectory.proposals.get((block, step))
        if proposal is None:
            # LLaDA-2: the candidates are the draws; DiffusionGemma: the canvas holds them where they count.
            frame = self._frame(block, step)
            proposal = frame.candidates if self.sampled_candidates else frame.canvas
        return np.asarray(proposal, np.int32).reshape(count)

    def uniform(self, count: int, *, block: int, step: int) -> np.ndarray:
        raise AssertionError("a replay serves recorded proposals, never uniforms")

    def sampled(self, ids: np.ndarray, *, block: int, step: int) -> None:
        return None


def fill_template(trajectory: Trajectory) -> FillTemplate | None:
    """The recorded template as given ids and holes (the ids as tokenized then, so the replay sees the same)."""
    if trajectory.fill is None:
        return None
    ids, hole = (np.asarray(a) for a in trajectory.fill)
    segments, start = [], 0
    for end in range(1, len(ids) + 1):
        if end == len(ids) or hole[end] != hole[start]:
            segments.append(Given(ids=tuple(int(t) for t in ids[start:end])) if hole[start] < 0 else Hole(end - start))
            start = end
    return FillTemplate(tuple(segments))


def replay(model, trajectory: Trajectory, **options) -> Iterator[Event]:
    """Generate again with the recorded prompt, settings, template and draws (`options` go to engine.generate,
    e.g. record=True)."""
    from ..generation.api import generate

    meta = trajectory.meta
    if meta.get("family") != model.family:
        raise InputError(f"the trajectory was recorded with a {meta.get('family')} model, not {model.family}")
    if meta.get("images"):
        raise InputError("the trajectory's prompt had images, which it does not keep: it cannot be replayed")
    return generate(model, prompt_ids=trajectory.prompt_ids, settings=Settings.from_dict(meta.get("settings", {})),
                    randomness=ReplayRandomness(trajectory), fill=fill_template(trajectory), **options)
