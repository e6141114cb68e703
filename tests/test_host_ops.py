"""The NumPy versions of the network's element-wise ops agree with MLX's own (they replace them on the CPU)."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.models import host_ops


@pytest.fixture
def mlx_only(monkeypatch):
    def run(fn, *args, **kwargs):
        monkeypatch.setattr(host_ops, "enabled", False)
        reference = fn(*args, **kwargs)
        monkeypatch.setattr(host_ops, "enabled", True)
        return reference

    return run


def _random(shape, seed):
    return mx.array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


@pytest.mark.parametrize("op", [host_ops.geglu, host_ops.swiglu])
def test_gates_match_mlx(op, mlx_only):
    gate, up = _random((3, 7, 48), 1) * 4, _random((3, 7, 48), 2)
    np.testing.assert_allclose(np.array(op(gate, up)), np.array(mlx_only(op, gate, up)), rtol=2e-5, atol=2e-6)


def test_gates_keep_the_input_dtype():
    gate = _random((2, 16), 3).astype(mx.bfloat16)
    assert host_ops.geglu(gate, gate).dtype == mx.bfloat16


def _masks(length, span):
    rng = np.random.default_rng(4)
    visible = rng.random((length, span)) < 0.6
    visible[:, 0] = True  # every query sees at least one key, as in every mask the networks build
    return {
        "none": None,
        "causal": "causal",
        "bool": mx.array(visible),
        "additive": mx.array(np.where(visible, 0.0, -1e9).astype(np.float32)),
        "bool, batched": mx.array(np.broadcast_to(visible, (2, 1, length, span))),
    }


@pytest.mark.parametrize("mask_name", list(_masks(5, 9)))
@pytest.mark.parametrize("kv_heads", [1, 2, 4])
def test_attention_matches_scaled_dot_product_attention(mask_name, kv_heads, mlx_only):
    q, k, v = _random((2, 4, 5, 16), 5), _random((2, kv_heads, 9, 16), 6), _random((2, kv_heads, 9, 16), 7)
    mask = _masks(5, 9)[mask_name]
    reference = mlx_only(host_ops.attention, q, k, v, 0.25, mask)
    np.testing.assert_allclose(np.array(host_ops.attention(q, k, v, 0.25, mask)), np.array(reference),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mask_name", list(_masks(5, 9)))
@pytest.mark.parametrize("kv_heads", [1, 2, 4])
def test_attention_split_across_the_pool_matches_one_thread(mask_name, kv_heads, mlx_only, monkeypatch):
    # Inputs this small run on one thread; with the threshold at 0 the same call runs its parts on the pool.
    q, k, v = _random((2, 4, 5, 16), 8), _random((2, kv_heads, 9, 16), 9), _random((2, kv_heads, 9, 16), 10)
    mask = _masks(5, 9)[mask_name]
    one_thread = np.array(host_ops.attention(q, k, v, 0.25, mask))
    monkeypatch.setattr(host_ops, "PARALLEL_MIN_SCORES", 0)
    pooled = np.array(host_ops.attention(q, k, v, 0.25, mask))
    np.testing.assert_array_equal(pooled, one_thread)  # each part's arithmetic does not depend on the split
    np.testing.assert_allclose(pooled, np.array(mlx_only(host_ops.attention, q, k, v, 0.25, mask)),
                               rtol=1e-4, atol=1e-5)


def test_attention_parts_cover_every_query_head_once():
    for batch, kv_heads, groups, wanted in [(1, 1, 8, 2), (1, 4, 2, 2), (2, 1, 4, 8), (1, 2, 3, 5), (1, 8, 1, 2)]:
        parts = host_ops.attention_parts(batch, kv_heads, groups, wanted)
        heads = [(b, h) for b, kv, first, end in parts for h in range(first, end)]
        assert sorted(heads) == [(b, h) for b in range(batch) for h in range(kv_heads * groups)]
        assert all(kv * groups <= first < end <= (kv + 1) * groups for _, kv, first, end in parts)
        assert len(parts) >= min(wanted, batch * kv_heads * groups)
