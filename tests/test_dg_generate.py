"""DiffusionGemma generation: the official trajectories replayed from recorded draws, mlx-vlm's golden run,
and the loop's contract (events, stopping, canvas length, cancellation, prefix reuse)."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

import engine
from engine.events import BlockCommitted, Finished, Started, Step
from engine.generation.diffusion_gemma import resolve_plan
from engine.generation.randomness import Draws

from conftest import CHECKPOINTS, FIXTURES

OFFICIAL = FIXTURES / "hf" / "dg_text"
MLX_GOLDEN = FIXTURES / "golden" / "dg_text"
EOS = (1, 106, 50)


class RecordedDraws(Draws):
    """Serves the reference's random draws by (block, step), and records the calls the engine makes."""

    def __init__(self, npz, init_key: str):
        self.data = np.load(npz)
        self.init_key = init_key
        self.calls: list[tuple[str, int, int]] = []

    def tokens(self, count, *, block, step):
        self.calls.append(("tokens", block, step))
        if step == -1:
            row = self.data[f"b{block}_{self.init_key}"]
        else:
            row = self.data[f"b{block}_renoise_draw"][step]
        return row.astype(np.int32).reshape(count)

    def proposals(self, count, *, block, step):
        self.calls.append(("categorical", block, step))
        return self.data[f"b{block}_proposals"][step].astype(np.int32).reshape(count)

    def uniform(self, count, *, block, step):
        raise AssertionError("recorded proposals are served instead")


@pytest.fixture(scope="module")
def model():
    return engine.load(CHECKPOINTS / "dg_text")


def run(model, **kwargs):
    events = list(engine.generate(model, **kwargs))
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    return events, blocks, events[-1]


OFFICIAL_RUNS = ["trace_p0_seed0", "trace_p0_seed1", "trace_p1_seed2", "trace_p2_seed3",
                 "trace_p1_seed4_stop_stab0_conf0.45", "trace_p0_seed0_argmax_proposals"]


@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
@pytest.mark.parametrize("name", OFFICIAL_RUNS)
def test_official_trajectories_replay_token_for_token(model, name):
    meta = json.loads((OFFICIAL / f"{name}.json").read_text())
    data = np.load(OFFICIAL / f"{name}.npz")
    overrides = meta.get("generate_kwargs_overriding_generation_config") or {}
    settings = engine.Settings(max_tokens=meta["max_new_tokens"], diffusion_full_canvas=True,
                               temp=0.0 if "argmax" in name else 1.0, **overrides)
    events, blocks, finished = run(model, prompt_ids=meta["input_ids"], settings=settings,
                                   randomness=RecordedDraws(OFFICIAL / f"{name}.npz", "init_draw"))
    assert list(finished.stats.steps_per_block) == meta["steps_per_block"]
    for block in blocks:
        assert list(block.committed) == data[f"b{block.block}_committed"].tolist(), f"block {block.block}"
        steps = [e for e in events if isinstance(e, Step) and e.block == block.block]
        # Every intermediate canvas is the reference's next canvas; every argmax the reference's argmax.
        for step in steps[:-1]:
            assert step.canvas.tolist() == data[f"b{block.block}_canvas_in"][step.step + 1].tolist()
        for step in steps:
            assert step.candidates.tolist() == data[f"b{block.block}_argmax"][step.step].tolist()
            np.testing.assert_allclose(step.temperature, data[f"b{block.block}_temperature"][step.step], atol=1e-6)
    # The official output pads after the first EOS and runs past max_new_tokens; ours stops before both.
    official = data["output_ids"].tolist()
    first_eos = next((i for i, t in enumerate(official) if t in EOS), len(official))
    assert list(finished.token_ids) == official[:first_eos][: meta["max_new_tokens"]]
    assert finished.finish_reason == ("stop" if first_eos < meta["max_new_tokens"] else "length")


@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
def test_official_stopping_rule_ends_blocks_early(model):
    meta = json.loads((OFFICIAL / "trace_p1_seed4_stop_stab0_conf0.45.json").read_text())
    _, blocks, _ = run(model, prompt_ids=meta["input_ids"],
                       settings=engine.Settings(max_tokens=meta["max_new_tokens"], diffusion_full_canvas=True,
                                                stability_threshold=0, confidence_threshold=0.45),
                       randomness=RecordedDraws(OFFICIAL / "trace_p1_seed4_stop_stab0_conf0.45.npz", "init_draw"))
    assert blocks[0].stop_reason == "stable_and_confident" and blocks[0].steps == 42


@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
def test_mlx_vlm_entropy_bound_golden_replays(model):
    meta = json.loads((MLX_GOLDEN / "trace_entropy_bound.json").read_text())
    draws = RecordedDraws(MLX_GOLDEN / "trace_entropy_bound.npz", "init_canvas")
    _, blocks, finished = run(model, prompt_ids=meta["input_ids"], randomness=draws,
                              settings=engine.Settings(max_tokens=80, temp=0.0))
    assert list(finished.token_ids) == meta["generated_token_ids"]
    assert list(finished.stats.steps_per_block) == meta["steps_per_block"]
    assert not any(kind == "categorical" for kind, _, _ in draws.calls)  # temp 0: argmax proposals, no draws


@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
def test_confidence_threshold_follows_mlx_trajectory_and_commits_what_it_confirmed(model):
    meta = json.loads((MLX_GOLDEN / "trace_confidence_threshold.json").read_text())
    data = np.load(MLX_GOLDEN / "trace_confidence_threshold.npz")
    events, blocks, _ = run(model, prompt_ids=meta["input_ids"],
                            settings=engine.Settings(max_tokens=80, temp=0.0, diffusion_sampler="confidence-threshold"),
                            randomness=RecordedDraws(MLX_GOLDEN / "trace_confidence_threshold.npz", "init_canvas"))
    steps = [e for e in events if isinstance(e, Step) and e.block == 0]
    # Block 0 denoises exactly like mlx-vlm (same canvases, same reveal counts, same number of steps) ...
    assert len(steps) == meta["steps_per_block"][0]
    for step in steps[:-1]:
        assert step.canvas.tolist() == data["b0_canvas_in"][step.step + 1].tolist()
        assert step.newly_accepted == int(data["b0_accept"][step.step].sum())
    assert blocks[0].stop_reason == "all_positions_revealed"
    # ... but commits its confirmed tokens (mlx-vlm commits the last argmax): the last frame is the text.
    for block in blocks:
        last = [e for e in events if isinstance(e, Step) and e.block == block.block][-1]
        assert last.canvas.tolist() == list(block.committed)


def test_event_stream_shape_and_last_frame_is_the_committed_block(model):
    events, blocks, finished = run(model, messages=[{"role": "user", "content": "Why is the sky blue?"}],
                                   settings=engine.Settings(max_tokens=40, max_denoising_steps=6))
    assert isinstance(events[0], Started) and isinstance(finished, Finished)
    assert sum(isinstance(e, Finished) for e in events) == 1
    for block in blocks:
        steps = [e for e in events if isinstance(e, Step) and e.block == block.block]
        assert [s.step for s in steps] == list(range(block.steps))
        assert steps[-1].canvas.tolist() == list(block.committed) and steps[-1].accepted.all()
        assert list(block.accepted_per_step) == [s.newly_accepted for s in steps]
        assert all(s.score_kind == "entropy" and s.scores.shape == s.canvas.shape for s in steps)
    # Only committed text is ever reported, and with the held-back tail it adds up to the final answer; every
    # BlockCommitted is a real block (no pseudo-blocks).
    delivered = "".join(e.content_delta for e in events if isinstance(e, BlockCommitted))
    assert delivered + finished.content_tail == finished.content
    assert all(e.steps >= 1 for e in events if isinstance(e, BlockCommitted))
    assert len(finished.token_ids) <= 40 and finished.stats.generated_tokens == len(finished.token_ids)


def test_canvas_length_formula_and_full_canvas():
    s = resolve_plan(engine.Settings(max_tokens=300), {}, 256)
    assert [s.block_length(r) for r in (300, 44, 10)] == [256, 64, 64]
    s = resolve_plan(engine.Settings(diffusion_min_canvas_length=16, diffusion_max_canvas_length=128), {}, 256)
    assert [s.block_length(r) for r in (300, 20, 5)] == [128, 20, 16]
    assert resolve_plan(engine.Settings(diffusion_full_canvas=True), {}, 256).block_length(5) == 256
    tiny = resolve_plan(engine.Settings(), {}, 32)
    assert tiny.block_length(5) == 32  # never longer than the checkpoint's canvas


def test_checkpoint_defaults_and_other_spellings():
    official = json.loads((CHECKPOINTS / "dg_text" / "generation_config.json").read_text())
    s = resolve_plan(engine.Settings(), official, 32)
    assert (s.max_denoising_steps, s.entropy_bound, s.t_min, s.t_max, s.stability_threshold, s.confidence_threshold,
            s.max_tokens, s.diffusion_sampler, s.temp) == (48, 0.1, 0.4, 0.8, 1, 0.005, 256, "entropy-bound", 1.0)
    nested = {"linear_temperature_schedule_config": {"t_min": 0.3, "t_max": 0.9},
              "diffusion_stopping_config": {"confidence_threshold": 0.01, "stability_threshold": 2}}
    s = resolve_plan(engine.Settings(max_denoising_steps=7), nested, 32)
    assert (s.t_min, s.t_max, s.confidence_threshold, s.stability_threshold, s.max_denoising_steps) == (
        0.3, 0.9, 0.01, 2, 7)


def test_max_tokens_cuts_inside_a_block(model):
    _, _, finished = run(model, prompt_ids=[2, 105, 194], settings=engine.Settings(max_tokens=5, max_denoising_steps=3))
    assert len(finished.token_ids) == 5 and finished.finish_reason == "length"


def test_same_seed_same_output_other_seed_differs(model):
    settings = engine.Settings(max_tokens=32, max_denoising_steps=4)
    a = run(model, prompt_ids=[2, 105, 194], settings=settings)[2].token_ids
    b = run(model, prompt_ids=[2, 105, 194], settings=settings)[2].token_ids
    c = run(model, prompt_ids=[2, 105, 194], settings=settings.replace(seed=7))[2].token_ids
    assert a == b and a != c


def test_cancel_stops_within_one_step_and_keeps_committed_blocks(model):
    cancel = threading.Event()
    seen = []
    for event in engine.generate(model, prompt_ids=[2, 105, 194], cancel=cancel,
                                 settings=engine.Settings(max_tokens=96, max_denoising_steps=8)):
        seen.append(event)
        if isinstance(event, Step) and event.block == 1 and event.step == 2:
            cancel.set()
    finished = seen[-1]
    assert finished.finish_reason == "cancelled"
    steps_after_cancel = [e for e in seen if isinstance(e, Step) and (e.block, e.step) > (1, 2)]
    assert steps_after_cancel == []
    committed = [e for e in seen if isinstance(e, BlockCommitted) and e.token_ids]
    assert len(committed) == 1 and finished.token_ids == committed[0].token_ids


def test_follow_up_turn_encodes_only_new_tokens(model):
    session = engine.Session()
    settings = engine.Settings(max_tokens=16, max_denoising_steps=3)
    first = [{"role": "user", "content": "Why is the sky blue?"}]
    events = list(engine.generate(model, messages=first, settings=settings, session=session))
    turn1 = events[0]
    assert turn1.encoded_tokens == turn1.prompt_tokens
    second = first + [{"role": "assistant", "content": events[-1].content},
                      {"role": "user", "content": "And the sunset?"}]
    turn2 = next(iter(engine.generate(model, messages=second, settings=settings, session=session)))
    assert turn2.encoded_tokens < turn2.prompt_tokens - turn1.prompt_tokens + 24
    assert turn2.encoded_tokens < turn2.prompt_tokens


def test_prefix_reuse_gives_the_same_result_as_a_fresh_prefill(model):
    settings = engine.Settings(max_tokens=32, max_denoising_steps=4)
    session = engine.Session()
    list(engine.generate(model, prompt_ids=[2, 105, 194, 488, 191, 107], settings=settings, session=session))
    longer = [2, 105, 194, 488, 191, 107, 164, 181, 198]
    reused = run(model, prompt_ids=longer, settings=settings, session=session)
    fresh = run(model, prompt_ids=longer, settings=settings)
    assert reused[0][0].encoded_tokens == 3
    assert reused[2].token_ids == fresh[2].token_ids


@pytest.mark.parametrize("bad,message", [
    (dict(max_tokens=0), "positive integer"),
    (dict(diffusion_sampler="greedy"), "unknown sampler"),
    (dict(diffusion_threshold=0.0), "(0, 1]"),
    (dict(diffusion_threshold=1.5), "(0, 1]"),
])
def test_bad_settings_are_refused(model, bad, message):
    with pytest.raises(engine.SettingsError, match=message.replace("(", r"\(").replace("]", r"\]")):
        list(engine.generate(model, prompt_ids=[2, 3], settings=engine.Settings(**bad)))


def test_empty_prompt_is_refused(model):
    with pytest.raises(engine.InputError, match="empty"):
        list(engine.generate(model, messages=[{"role": "user", "content": "  "}]))
    with pytest.raises(engine.InputError, match="empty"):
        list(engine.generate(model, prompt_ids=[]))


def test_a_turn_that_fails_mid_generation_leaves_the_session_consistent(model, monkeypatch):
    settings = engine.Settings(max_tokens=32, max_denoising_steps=3)
    session = engine.Session()
    list(engine.generate(model, prompt_ids=[2, 105, 194, 488, 191, 107, 164, 181, 198], settings=settings,
                         session=session))
    original = type(model.network).denoise

    def out_of_memory(*args, **kwargs):
        raise RuntimeError("out of memory")

    # Turn 2 shares only a short prefix, encodes its own prompt, then fails in the first denoising step.
    monkeypatch.setattr(type(model.network), "denoise", out_of_memory)
    with pytest.raises(RuntimeError):
        list(engine.generate(model, prompt_ids=[2, 105, 194, 300, 301, 302, 303], settings=settings,
                             session=session))
    monkeypatch.setattr(type(model.network), "denoise", original)
    # Turn 3 repeats turn 1's prompt: whatever is reused must be what the cache really holds.
    turn1 = [2, 105, 194, 488, 191, 107, 164, 181, 198]
    reused = run(model, prompt_ids=turn1, settings=settings, session=session)
    fresh = run(model, prompt_ids=turn1, settings=settings)
    assert reused[2].token_ids == fresh[2].token_ids
    assert reused[0][0].encoded_tokens == len(turn1) - 3  # only [2, 105, 194] was still valid
