"""LLaDA-2's sampler maths: threshold schedules, which positions a step transfers, top-k / top-p and the greedy
proposal against the reference helpers (tests/fixtures/units/sampler_units.npz), and the plan's defaults."""

import mlx.core as mx
import numpy as np
import pytest
from conftest import FIXTURES

import engine
from engine.generation.llada2 import propose, resolve_plan
from engine.generation.sampling import (
    select_transfer,
    threshold_schedule,
    top_k_filter,
    top_p_filter,
    transfer_schedule,
)

UNITS = np.load(FIXTURES / "units" / "sampler_units.npz")


def test_threshold_schedule():
    assert threshold_schedule(0.9, 0.5, 3) == pytest.approx([0.9, 0.7, 0.5])
    assert threshold_schedule(0.95, 0.95, 4) == pytest.approx([0.95] * 4)
    assert threshold_schedule(0.8, 0.2, 1) == [0.8]
    assert threshold_schedule(1.0, 0.0, 5)[2] == pytest.approx(0.5)


def test_select_transfer_rules():
    inf = -np.inf
    # above threshold (strict) when that reaches the quota; masked-out positions never
    assert select_transfer(np.array([0.97, 0.5, inf, 0.96]), 1, 0.95).tolist() == [True, False, False, True]
    assert select_transfer(np.array([0.95, 0.5, 0.2]), 1, 0.95).tolist() == [True, False, False]  # fallback
    # fewer above than the quota: the quota's most confident, ties to the lowest index
    assert select_transfer(np.array([0.96, 0.3, 0.5, 0.5, inf]), 3, 0.95).tolist() == [True, False, True, True, False]
    # never more than the masked positions; nothing masked -> nothing
    assert select_transfer(np.array([0.1, inf, inf]), 4, 0.95).tolist() == [True, False, False]
    assert not select_transfer(np.array([inf, inf]), 1, 0.95).any()


def test_a_cap_keeps_the_most_confident_above_the_threshold_but_never_fewer_than_the_quota():
    inf = -np.inf
    confident = np.array([0.99, 0.97, inf, 0.999, 0.98])
    assert select_transfer(confident, 1, 0.95, cap=0).tolist() == [True, True, False, True, True]   # no cap
    assert select_transfer(confident, 1, 0.95, cap=2).tolist() == [True, False, False, True, False]
    assert select_transfer(confident, 1, 0.95, cap=4).tolist() == [True, True, False, True, True]   # within it
    # the quota wins over a smaller cap, so a block still fills within its steps
    assert select_transfer(confident, 3, 0.95, cap=1).tolist() == [True, False, False, True, True]
    # unsure positions (below the threshold) go one at a time at quota 1, whatever the cap
    unsure = np.array([0.68, 0.52, 0.67, 0.66])
    assert select_transfer(unsure, 1, 0.9, cap=4).tolist() == [True, False, False, False]


def test_reveal_order_with_fixed_confidences():
    confidence = np.array([0.95, 0.80, 0.99, 0.70])
    masked = np.ones(4, bool)
    order = []
    for quota in transfer_schedule(4, 4):
        transfer = select_transfer(np.where(masked, confidence, -np.inf), quota, 0.9)
        if not transfer.any():
            break
        order.append(np.flatnonzero(transfer).tolist())
        masked &= ~transfer
    assert order == [[0, 2], [1], [3]]


def test_top_k_and_top_p_match_reference_helpers():
    logits = mx.array(UNITS["llada_logits"])
    for ours, theirs in ((top_k_filter(logits, 4), UNITS["llada_top_k4"]), (top_p_filter(logits, 0.7), UNITS["llada_top_p0.7"])):
        ours = np.array(ours)
        kept = theirs > -1e30  # the reference fills with the lowest float, we with -inf
        np.testing.assert_array_equal(np.isfinite(ours), kept)
        np.testing.assert_array_equal(ours[kept], theirs[kept])
    assert (np.isfinite(np.array(top_k_filter(logits, 4))).sum(-1) == 4).all()
    assert np.array_equal(np.array(top_p_filter(logits, None)), UNITS["llada_logits"])


def test_greedy_proposal_matches_reference_helper():
    settings = resolve_plan(engine.Settings(temp=0.0, top_k=3), {})
    analysis = propose(mx.array(UNITS["llada_logits"]), settings, None, 0, 0)
    np.testing.assert_array_equal(analysis.proposal, UNITS["llada_greedy_x0"])
    np.testing.assert_allclose(analysis.probability, UNITS["llada_greedy_p"], atol=1e-6)


def test_resolve_plan_defaults_and_clamps():
    s = resolve_plan(engine.Settings(), {})
    assert (s.block_length, s.max_denoising_steps, s.diffusion_threshold, s.diffusion_threshold_end, s.temp,
            s.max_tokens) == (32, 32, 0.95, 0.95, 0.0, 256)
    assert resolve_plan(engine.Settings(), {"max_new_tokens": 100}).max_tokens == 100
    # steps beyond the block length are clamped to it; steps beyond max_tokens to max_tokens (official cap)
    assert resolve_plan(engine.Settings(max_denoising_steps=100, block_length=16), {}).max_denoising_steps == 16
    assert resolve_plan(engine.Settings(max_tokens=8), {}).max_denoising_steps == 8
    assert resolve_plan(engine.Settings(top_p=1.0, top_k=0), {}).top_p is None


def test_a_checkpoint_threshold_is_the_default_and_the_user_still_wins():
    shipped = {"threshold": 0.999}   # the bundled LLaDA-2 demo's generation_config
    assert resolve_plan(engine.Settings(), shipped).diffusion_threshold == 0.999
    assert resolve_plan(engine.Settings(), shipped).diffusion_threshold_end == 0.999
    assert resolve_plan(engine.Settings(diffusion_threshold=0.8), shipped).diffusion_threshold == 0.8
    assert resolve_plan(engine.Settings(llada_mode="speed"), shipped).diffusion_threshold == 0.5
