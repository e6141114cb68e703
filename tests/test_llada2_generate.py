"""LLaDA-2 generation: the transfer schedule, teacher-forced steps and whole trajectories against the official
LLaDA2.0 generate() (tests/fixtures/hf/llada2) and mlx-vlm (tests/fixtures/golden/*/trace_default), events,
bad input, cancellation and session reuse (the sampler's other maths: test_llada2_sampler.py)."""

import json
import threading
from types import SimpleNamespace

import mlx.core as mx
import numpy as np
import pytest
from conftest import CHECKPOINTS, FIXTURES, GOLDEN

import engine
from engine.errors import InputError, SettingsError
from engine.events import BlockCommitted, Finished, Started, Step
from engine.generation import llada2
from engine.generation.llada2 import propose, resolve_plan
from engine.generation.randomness import Draws
from engine.generation.sampling import (
    select_transfer,
    threshold_schedule,
    transfer_schedule,
)

HF = FIXTURES / "hf" / "llada2"
MASK, EOS = 495, 492
TRACES = [
    "greedy_p0",
    "greedy_p0_steps8",       # quota 4 per step: the top-n fallback
    "greedy_p1",
    "greedy_p2",
    "sample_p0_t0.8_seed0",
    "sample_p1_t1.0_topk20_topp0.9_seed1",
]


@pytest.fixture(scope="module")
def model():
    return engine.load(CHECKPOINTS / "llada2")


def _trace(run):
    return json.loads((HF / f"trace_{run}.json").read_text()), np.load(HF / f"trace_{run}.npz")


def _settings(kwargs) -> engine.Settings:
    return engine.Settings(
        max_tokens=kwargs["gen_length"], block_length=kwargs["block_length"], max_denoising_steps=kwargs["steps"],
        diffusion_threshold=kwargs["threshold"], temp=kwargs["temperature"], top_k=kwargs.get("top_k"),
        top_p=kwargs.get("top_p"),
    )


class ReplayDraws(Draws):
    """Hands out the reference's recorded torch.multinomial draws instead of sampling."""

    def __init__(self, npz):
        self.npz = npz
        self.calls = []

    def proposals(self, count, *, block, step):
        self.calls.append((block, step, count))
        return np.asarray(self.npz[f"b{block}_draws"][step], np.int32).reshape(count)

    def uniform(self, count, *, block, step):
        raise AssertionError("recorded draws are served instead")

    def tokens(self, count, *, block, step):
        raise AssertionError("LLaDA-2 never draws noise tokens")


def _run(model, prompt_ids, settings, **kwargs):
    return list(engine.generate(model, prompt_ids=prompt_ids, settings=settings, **kwargs))


def _steps(events):
    return [e for e in events if isinstance(e, Step)]


# ---- sampler maths ------------------------------------------------------------------------------------------

def test_transfer_schedule():
    assert transfer_schedule(32, 32) == [1] * 32
    assert transfer_schedule(32, 8) == [4] * 8
    assert transfer_schedule(10, 5) == [2] * 5
    assert transfer_schedule(7, 3) == [3, 2, 2]
    assert transfer_schedule(32, 20) == [2] * 12 + [1] * 8
    for run in TRACES:
        meta, npz = _trace(run)
        assert transfer_schedule(32, meta["effective_steps"]) == npz["num_transfer_schedule"].tolist()


# ---- teacher-forced steps vs the official generate() -----------------------------------------------------------

@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
@pytest.mark.parametrize("run", TRACES)
def test_teacher_forced_steps_match_official(model, run):
    meta, npz = _trace(run)
    net = model.network
    settings = resolve_plan(_settings(meta["generate_kwargs"]), {})
    draws = ReplayDraws(npz)
    prompt = meta["input_ids"]
    cache = net.prefill(mx.array([prompt[: len(prompt) // 32 * 32]], dtype=mx.int32))
    quotas = transfer_schedule(32, settings.max_denoising_steps)
    for b, steps in enumerate(meta["steps_per_block"]):
        prompt_positions = meta["blocks"][b]["prompt_positions_in_block"]
        for s in range(steps):
            block_in = npz[f"b{b}_block_in"][s]
            logits = net.denoise(mx.array(block_in[None]), cache)[0]
            analysis = propose(logits, settings, draws, b, s)
            x0, p = analysis.proposal, analysis.probability
            clear = npz[f"b{b}_top1_margin"][s] > 1e-3
            np.testing.assert_array_equal(x0[clear], npz[f"b{b}_x0"][s][clear])
            np.testing.assert_allclose(p, npz[f"b{b}_x0_p"][s], atol=1e-4)
            masked = (block_in == MASK) & (np.arange(32) >= prompt_positions)
            transfer = select_transfer(np.where(masked, p, -np.inf), quotas[s], settings.diffusion_threshold)
            np.testing.assert_array_equal(transfer, npz[f"b{b}_transfer"][s])
        net.commit(mx.array(npz[f"b{b}_committed"][None]), cache)


# ---- whole trajectories -----------------------------------------------------------------------------------------

@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
@pytest.mark.parametrize("run", TRACES)
def test_trajectory_matches_official_token_for_token(model, run):
    meta, npz = _trace(run)
    randomness = ReplayDraws(npz)
    events = _run(model, meta["input_ids"], _settings(meta["generate_kwargs"]), randomness=randomness)
    finished = events[-1]
    assert list(finished.token_ids) == meta["generated_ids"]
    assert list(finished.stats.steps_per_block) == meta["steps_per_block"]
    assert finished.finish_reason == "length"
    for step in _steps(events):
        np.testing.assert_array_equal(step.canvas, npz[f"b{step.block}_block_out"][step.step])
        np.testing.assert_array_equal(step.canvas != MASK, step.accepted)
    committed = [e for e in events if isinstance(e, BlockCommitted)]
    for b, event in enumerate(committed):
        assert list(event.committed) == npz[f"b{b}_committed"].tolist()
    # sampled runs draw exactly once per step, for the whole block
    sampled = meta["generate_kwargs"]["temperature"] > 0
    assert len(randomness.calls) == (sum(meta["steps_per_block"]) if sampled else 0)
    assert all(count == 32 for _, _, count in randomness.calls)


@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
@pytest.mark.parametrize("variant", ["llada2", "llada2_mlx_fp32", "llada2_mlx_4bit"])
def test_defaults_reproduce_mlx_vlm_trace(variant):
    # With the defaults (block 32, steps 32, greedy, 0.95) mlx-vlm and the official loop agree.
    meta = json.loads((GOLDEN / variant / "trace_default.json").read_text())
    npz = np.load(GOLDEN / variant / "trace_default.npz")
    events = _run(engine.load(CHECKPOINTS / variant), meta["input_ids"], engine.Settings(max_tokens=meta["max_tokens"]))
    assert list(events[-1].token_ids) == meta["generated_token_ids"]
    assert list(events[-1].stats.steps_per_block) == meta["steps_per_block"]
    for step in _steps(events):
        transfer = step.accepted & (npz[f"b{step.block}_block_in"][step.step] == MASK)
        np.testing.assert_array_equal(transfer, npz[f"b{step.block}_transfer"][step.step])
        np.testing.assert_array_equal(step.candidates, npz[f"b{step.block}_x0"][step.step])


@pytest.mark.parametrize("max_tokens", [8, 20])
@pytest.mark.parametrize("steps", [None, 1, 3])
def test_blocks_never_committed_with_masks(model, max_tokens, steps):
    prompt = _trace("greedy_p1")[0]["input_ids"]
    events = _run(model, prompt, engine.Settings(max_tokens=max_tokens, max_denoising_steps=steps))
    committed = [e for e in events if isinstance(e, BlockCommitted)]
    assert committed and all(MASK not in e.committed and len(e.committed) == 32 for e in committed)
    finished = events[-1]
    assert len(finished.token_ids) == max_tokens and MASK not in finished.token_ids
    limit = min(steps or 32, max_tokens)
    assert all(step.max_steps == limit for step in _steps(events))
    assert all(n <= limit for n in finished.stats.steps_per_block)


def _commits(events):
    """Each Step with the positions it committed and the confidence it chose them by (-inf where the block held
    no mask before it), so a test can replay the step's choice with select_transfer."""
    previous = {}
    for step in _steps(events):
        before = previous.get(step.block, np.arange(32) < step.prompt_positions)
        yield step, step.accepted & ~before, np.where(before, -np.inf, step.scores)
        previous[step.block] = step.accepted


def test_threshold_schedule_drives_each_step(model):
    prompt = _trace("greedy_p0")[0]["input_ids"]
    settings = engine.Settings(max_tokens=40, diffusion_threshold=1.0, diffusion_threshold_end=0.3, max_denoising_steps=16)
    events = _run(model, prompt, settings)
    thresholds = threshold_schedule(1.0, 0.3, 16)
    quotas = transfer_schedule(32, 16)
    for step, committed, confidence in _commits(events):
        expected = select_transfer(confidence, quotas[step.step], thresholds[step.step])
        np.testing.assert_array_equal(committed, expected)
    # a constant threshold nothing can clear commits exactly the quota per step
    strict = _run(model, prompt, settings.replace(diffusion_threshold_end=1.0))
    assert all(step.newly_accepted == 2 for step in _steps(strict))
    assert sum(events[-1].stats.steps_per_block) < sum(strict[-1].stats.steps_per_block)


def test_a_cap_on_commits_per_step_drives_each_step(model):
    """Random weights are unsure everywhere, so at a low threshold every masked position clears it: without the
    cap a step commits all of them; with it, at most max(cap, quota), the most confident."""
    prompt = _trace("greedy_p0")[0]["input_ids"]
    settings = engine.Settings(max_tokens=40, diffusion_threshold=0.0001, max_denoising_steps=32)
    uncapped = _run(model, prompt, settings)
    assert max(step.newly_accepted for step in _steps(uncapped)) > 3
    events = _run(model, prompt, settings.replace(max_transfer_per_step=3))
    for step, committed, confidence in _commits(events):
        np.testing.assert_array_equal(committed, select_transfer(confidence, 1, 0.0001, 3))
        assert step.newly_accepted <= 3
    assert sum(events[-1].stats.steps_per_block) > sum(uncapped[-1].stats.steps_per_block)
    assert resolve_plan(engine.Settings(), {"max_transfer_per_step": 4}).max_transfer_per_step == 4
    assert resolve_plan(engine.Settings(max_transfer_per_step=0), {"max_transfer_per_step": 4}).max_transfer_per_step == 0


# ---- events --------------------------------------------------------------------------------------------------

def test_event_stream_shape(model):
    meta, npz = _trace("greedy_p0")
    events = _run(model, meta["input_ids"], engine.Settings(max_tokens=40))
    started, finished = events[0], events[-1]
    assert isinstance(started, Started) and isinstance(finished, Finished)
    assert (started.prompt_tokens, started.encoded_tokens, started.block_length) == (50, 50, 32)
    first = _steps(events)[0]
    assert first.prompt_positions == 18 and first.accepted[:18].all()
    assert first.noise_is_mask and first.score_kind == "confidence" and first.temperature == 0.0
    assert first.canvas.dtype == np.int32 and first.scores.dtype == np.float32
    assert first.newly_accepted == int(npz["b0_transfer"][0].sum())
    masked = npz["b0_block_in"][0] == MASK
    np.testing.assert_allclose(first.scores[masked], npz["b0_x0_p"][0][masked], atol=1e-4)
    assert (first.scores[~masked] == 1.0).all()
    second = _steps(events)[1]
    # a committed position keeps the confidence it was committed with
    newly = first.accepted & ~(np.arange(32) < 18)
    np.testing.assert_array_equal(second.scores[newly], first.scores[newly])
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    per_block = {}
    for step in _steps(events):
        per_block[step.block] = per_block.get(step.block, 0) + step.newly_accepted
    assert per_block == {0: 14, 1: 32}  # every masked position of each block, once
    # Each BlockCommitted carries its steps' accepted counts, so a UI sampling frames still gets them all.
    for block in blocks:
        assert list(block.accepted_per_step) == [s.newly_accepted for s in _steps(events) if s.block == block.block]
    assert sum(len(b.token_ids) for b in blocks) == 40 == finished.stats.generated_tokens
    assert finished.content == "".join(b.content_delta for b in blocks) + finished.content_tail
    assert finished.content == model.tokenizer.decode(finished.token_ids).strip()
    assert finished.stats.work_tokens == 32 * sum(finished.stats.steps_per_block)


# ---- EOS ------------------------------------------------------------------------------------------------------

class ScriptedNetwork:
    """Greedy picks token 7 everywhere (confidently), EOS at one absolute position."""

    vocab_size, mask_token_id, eos_token_ids, context_length = 512, MASK, (EOS,), 32768

    def __init__(self, eos_at):
        self.eos_at = eos_at
        self.forwards = 0

    def make_cache(self, block_length):
        return SimpleNamespace(offset=0)

    def prefill(self, ids, cache, block_length, cancel=None, progress=None):
        cache.offset += ids.shape[1]

    def denoise(self, block_ids, cache):
        self.forwards += 1
        logits = np.zeros((1, block_ids.shape[1], self.vocab_size), np.float32)
        logits[..., 7] = 12.0
        positions = cache.offset + np.arange(block_ids.shape[1])
        logits[0, positions == self.eos_at, EOS] = 20.0
        return mx.array(logits)

    def commit(self, ids, cache):
        cache.offset += ids.shape[1]


def _scripted(model, eos_at):
    return SimpleNamespace(family="llada2_moe", network=ScriptedNetwork(eos_at), generation_config={},
                           tokenizer=model.tokenizer)


def test_eos_stops_after_its_block_and_is_kept(model):
    scripted = _scripted(model, eos_at=10 + 13)  # prompt 10 -> the EOS is generated token 14, in block 1
    events = _run(scripted, list(range(10)), engine.Settings(max_tokens=100, block_length=8))
    finished = events[-1]
    assert finished.finish_reason == "stop"
    assert list(finished.token_ids) == [7] * 13 + [EOS]
    assert len(finished.stats.steps_per_block) == 2  # no block after the one holding the EOS
    assert scripted.network.forwards == 2


def test_eos_beyond_max_tokens_is_not_emitted(model):
    events = _run(_scripted(model, eos_at=10 + 13), list(range(10)), engine.Settings(max_tokens=12, block_length=8))
    assert events[-1].finish_reason == "length" and list(events[-1].token_ids) == [7] * 12


# ---- bad input ------------------------------------------------------------------------------------------------

def test_bad_settings_and_input(model):
    with pytest.raises(SettingsError, match="block_length"):
        engine.Settings(block_length=0).validated()
    with pytest.raises(SettingsError):
        engine.generate(model, prompt_ids=[1, 2], settings=engine.Settings(block_length=0))
    with pytest.raises(InputError, match="images|image"):
        engine.generate(model, messages=[{"role": "user", "content": "hi"}], images=["x.png"])
    # raised when called, before any event
    with pytest.raises(InputError, match="text only"):
        llada2.build(model, llada2.plan_for(model, engine.Settings()), lambda seed: None,
                     pixel_values=[mx.zeros((3, 8, 8))])
    with pytest.raises(InputError, match="prompt ids"):
        engine.generate(model, prompt_ids=[1, 600], settings=engine.Settings())


def test_steps_above_block_length_are_clamped(model):
    prompt = _trace("greedy_p1")[0]["input_ids"]
    clamped = _run(model, prompt, engine.Settings(max_tokens=30, block_length=16, max_denoising_steps=500))
    exact = _run(model, prompt, engine.Settings(max_tokens=30, block_length=16, max_denoising_steps=16))
    assert {s.max_steps for s in _steps(clamped)} == {16}
    assert clamped[-1].token_ids == exact[-1].token_ids
    assert clamped[-1].stats.steps_per_block == exact[-1].stats.steps_per_block


# ---- cancel and session ------------------------------------------------------------------------------------------

def test_cancel_keeps_committed_blocks(model):
    meta, _ = _trace("greedy_p0")
    cancel = threading.Event()
    events = []
    for event in engine.generate(model, prompt_ids=meta["input_ids"], settings=engine.Settings(max_tokens=80),
                                 cancel=cancel):
        events.append(event)
        if isinstance(event, Step) and event.block == 1 and event.step == 2:
            cancel.set()
    finished = events[-1]
    assert finished.finish_reason == "cancelled"
    assert list(finished.token_ids) == meta["generated_ids"][:14]  # block 0's generated part only
    assert not [s for s in _steps(events) if s.block == 1 and s.step > 2]
    cancelled = [e for e in events if isinstance(e, BlockCommitted)][-1]
    assert cancelled.stop_reason == "cancelled"
    assert list(cancelled.accepted_per_step) == [s.newly_accepted for s in _steps(events) if s.block == 1]


def test_session_reuses_whole_cached_blocks(model):
    meta, _ = _trace("greedy_p0")
    session = engine.Session()
    first = _run(model, meta["input_ids"], engine.Settings(max_tokens=40), session=session)
    # the cache holds the prompt's whole blocks and every finished block
    assert session.family == "llada2_moe" and session.cache.offset == len(session.ids) == 96
    assert session.ids[:50] == meta["input_ids"] and session.ids[50:90] == list(first[-1].token_ids)
    follow_up = meta["input_ids"] + list(first[-1].token_ids) + [498, 496, 39, 52, 44]
    reused = _run(model, follow_up, engine.Settings(max_tokens=40), session=session)
    fresh = _run(model, follow_up, engine.Settings(max_tokens=40))
    assert reused[0].encoded_tokens == len(follow_up) - 64  # two whole blocks served from the cache
    assert reused[-1].token_ids == fresh[-1].token_ids
    # keys depend on the block length: another block length starts over
    other = _run(model, follow_up, engine.Settings(max_tokens=16, block_length=16), session=session)
    assert other[0].encoded_tokens == len(follow_up)
    assert other[-1].token_ids == _run(model, follow_up, engine.Settings(max_tokens=16, block_length=16))[-1].token_ids
