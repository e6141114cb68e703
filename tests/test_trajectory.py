"""Recorded trajectories (engine.recording.trajectory, engine.recording.replay): encoding round trips, replaying the recorded draws
through the engine gives the same tokens (both families, sampled), sizes, refusals, and the engine thread."""

from __future__ import annotations

import queue

import numpy as np
import pytest
from conftest import CHECKPOINTS

import engine
from engine.errors import InputError
from engine.events import (BlockCommitted, Finished, GenerationRequest, GenerationUpdate, LoadProgress, ModelLoaded,
                           Step)
from engine.recording.replay import ReplayRandomness, fill_template, replay
from engine.recording.trajectory import MAGIC, Trajectory, decode, encode
from engine.thread.worker import EngineWorker

PROMPT = [2, 105, 194, 488, 191, 107]


@pytest.fixture(scope="module")
def dg():
    return engine.load(CHECKPOINTS / "dg_text")


@pytest.fixture(scope="module")
def llada():
    return engine.load(CHECKPOINTS / "llada2")


def recorded(model, **kwargs):
    events = list(engine.generate(model, prompt_ids=PROMPT, record=True, **kwargs))
    return events, decode(events[-1].trajectory)


def frames_equal(a: Step, b: Step, stored: bool = False) -> None:
    """`a` is `b` (scores in float16 when `a` was `stored`)."""
    for name in ("block", "step", "max_steps", "newly_accepted", "score_kind", "noise_is_mask", "prompt_positions"):
        assert getattr(a, name) == getattr(b, name), name
    for name in ("canvas", "candidates", "accepted"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("fixed", "edited"):
        assert (getattr(a, name) is None) == (getattr(b, name) is None), name
        if getattr(a, name) is not None:
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    expected = b.scores.astype(np.float16).astype(np.float32) if stored else b.scores
    assert np.array_equal(a.scores, expected)


RUNS = {
    "dg-sampled": ("dg", dict(settings=engine.Settings(max_tokens=50, max_denoising_steps=6, temp=1.0))),
    "dg-confidence-sampled": ("dg", dict(settings=engine.Settings(max_tokens=50, max_denoising_steps=6, temp=0.8,
                                                                  diffusion_sampler="confidence-threshold"))),
    "dg-fill": ("dg", dict(settings=engine.Settings(max_denoising_steps=4), fill="A ___{6} b ___{30} c.")),
    "llada-sampled": ("llada", dict(settings=engine.Settings(max_tokens=50, temp=0.9, top_k=20, top_p=0.9,
                                                             seed=2))),
    "llada-editing-fill": ("llada", dict(settings=engine.Settings(temp=0.7, editing_threshold=0.01,
                                                                  max_post_steps=3, max_denoising_steps=8),
                                         fill="x ___{12} y ___{20} z")),
}


@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
@pytest.mark.parametrize("run", list(RUNS))
def test_replaying_the_recorded_draws_gives_the_same_tokens(request, run):
    family, kwargs = RUNS[run]
    model = request.getfixturevalue(family)
    events, trajectory = recorded(model, **kwargs)
    steps = [e for e in events if isinstance(e, Step)]
    # the encoded frames are the live ones
    assert len(trajectory.frames) == len(steps)
    for live, stored in zip(steps, trajectory.frames):
        frames_equal(stored, live, stored=True)
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    assert [(b.block, b.committed, b.token_ids, b.content_delta, b.edits) for b in trajectory.blocks] == \
        [(b.block, b.committed, b.token_ids, b.content_delta, b.edits) for b in blocks]
    finished = events[-1]
    assert trajectory.meta["token_ids"] == list(finished.token_ids)
    assert trajectory.meta["content"] == finished.content and trajectory.prompt_ids == PROMPT
    # ... and replaying them through the engine gives the same tokens, step for step
    again = list(replay(model, trajectory))
    assert again[-1].token_ids == finished.token_ids and again[-1].content == finished.content
    for live, replayed in zip(steps, (e for e in again if isinstance(e, Step))):
        frames_equal(replayed, live)
    if run == "dg-confidence-sampled":
        assert trajectory.proposals   # its proposals are not in the canvases
    if run == "llada-editing-fill":
        assert any(f.edited is not None for f in trajectory.frames) and trajectory.fill is not None


def test_other_draws_give_other_tokens(dg):
    # The replay really uses the recorded draws: the same request with another seed differs.
    events, trajectory = recorded(dg, settings=engine.Settings(max_tokens=50, max_denoising_steps=6, seed=1))
    other = list(engine.generate(dg, prompt_ids=PROMPT, settings=engine.Settings(max_tokens=50, max_denoising_steps=6,
                                                                                   seed=2)))
    assert other[-1].token_ids != events[-1].token_ids == list(replay(dg, trajectory))[-1].token_ids


def test_fill_template_round_trips(dg):
    _, trajectory = recorded(dg, settings=engine.Settings(max_denoising_steps=2), fill="A ___{3}___{2} b [...]")
    template = fill_template(trajectory)
    assert [type(s).__name__ for s in template.segments] == ["Given", "Hole", "Hole", "Given", "Hole"]
    assert [s.length for s in template.segments if type(s).__name__ == "Hole"] == [3, 2, 8]
    assert trajectory.meta["filled_spans"] and trajectory.meta["settings"] == {"max_denoising_steps": 2}


def test_texts_cover_what_a_viewer_draws(dg):
    _, trajectory = recorded(dg, settings=engine.Settings(max_tokens=30, max_denoising_steps=3))
    for frame in trajectory.frames:
        for token in np.concatenate([frame.candidates, frame.canvas[frame.accepted]]).tolist():
            assert trajectory.token_text(token) == dg.tokenizer.token_text(token)


def test_a_256_by_48_block_with_a_real_vocabulary_is_well_under_100_kb():
    rng = np.random.default_rng(0)
    answer, frames = rng.integers(0, 30_000, 256), []
    for k in range(48):
        accepted = rng.random(256) < (k + 1) / 48
        candidates = np.where(rng.random(256) < 0.3 + 0.7 * k / 48, answer, rng.integers(0, 30_000, 256))
        frames.append(Step(block=0, step=k, max_steps=48, candidates=candidates.astype(np.int32),
                           canvas=np.where(accepted, candidates, rng.integers(0, 262_144, 256)).astype(np.int32),
                           accepted=accepted, newly_accepted=int(accepted.sum()), score_kind="entropy",
                           scores=(rng.random(256) * 6).astype(np.float32), temperature=0.8, noise_is_mask=False))
    data = encode(Trajectory({"family": "diffusion_gemma"}, frames, [], list(range(300)),
                             {0: rng.integers(0, 262_144, 256).astype(np.int32)}))
    assert len(data) < 70_000
    assert [f.canvas.tolist() for f in decode(data).frames] == [f.canvas.tolist() for f in frames]


def test_bad_trajectories_are_refused_in_one_line(dg, llada):
    _, trajectory = recorded(dg, settings=engine.Settings(max_tokens=20, max_denoising_steps=2))
    data = encode(trajectory)
    for bad, message in ((b"hello", "not a diffusion-chat trajectory"), (data[:len(data) // 2], "damaged"),
                         (MAGIC + b"\x00" * 40, "damaged")):
        with pytest.raises(InputError, match=message) as error:
            decode(bad)
        assert "\n" not in str(error.value)
    with pytest.raises(InputError, match="recorded with a diffusion_gemma model"):
        replay(llada, trajectory)
    cut = Trajectory(dict(trajectory.meta), trajectory.frames[:1], [], trajectory.prompt_ids, trajectory.initial)
    with pytest.raises(InputError, match="no step 2 of block 1"):
        list(engine.generate(dg, prompt_ids=PROMPT, randomness=ReplayRandomness(cut),
                             settings=engine.Settings(max_tokens=20, max_denoising_steps=3)))


def test_no_trajectory_unless_asked_and_the_engine_thread_passes_requests_on(dg):
    assert list(engine.generate(dg, prompt_ids=PROMPT, settings=engine.Settings(max_tokens=8)))[-1].trajectory is None
    updates: queue.Queue = queue.Queue()
    worker = EngineWorker(updates.put).start()
    try:
        worker.load_model(str(CHECKPOINTS / "dg_text"))
        while isinstance(event := updates.get(timeout=60), LoadProgress):
            pass   # the load's stages (reading, compiling kernels)
        assert isinstance(event, ModelLoaded)
        worker.generate(GenerationRequest(messages=({"role": "user", "content": "Hi"},),
                                          settings=engine.Settings(max_denoising_steps=2),
                                          fill=engine.generation.fill.parse_fill("Hello ___{4} world"), record=True))
        while not isinstance(event := updates.get(timeout=60), GenerationUpdate) or \
                not isinstance(event.event, Finished):
            pass
        finished = event.event
        assert finished.content.startswith("Hello ") and len(finished.filled_spans) == 1
        assert decode(finished.trajectory).meta["content"] == finished.content
    finally:
        worker.close()
