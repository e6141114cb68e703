"""The NumPy versions of the network's element-wise ops (engine.cpu.ops) agree with MLX's own, which the op seam
(engine.models.ops) runs instead where the host path is off; and MLX's RoPE at long positions, measured."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.cpu import ops as host_ops
from engine.cpu import switch
from engine.models import ops


@pytest.fixture
def mlx_only():
    def run(fn, *args, **kwargs):
        with switch.disabled():
            return fn(*args, **kwargs)

    return run


def _random(shape, seed):
    return mx.array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


@pytest.mark.cpu_host
@pytest.mark.parametrize("name", ["geglu", "swiglu"])
def test_gates_match_mlx(name, mlx_only):
    gate, up = _random((3, 7, 48), 1) * 4, _random((3, 7, 48), 2)
    host, seam = getattr(host_ops, name), getattr(ops, name)
    np.testing.assert_allclose(np.array(host(gate, up)), np.array(mlx_only(seam, gate, up)), rtol=2e-5, atol=2e-6)


@pytest.mark.cpu_host
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


@pytest.mark.cpu_host
@pytest.mark.parametrize("mask_name", list(_masks(5, 9)))
@pytest.mark.parametrize("kv_heads", [1, 2, 4])
def test_attention_matches_scaled_dot_product_attention(mask_name, kv_heads, mlx_only):
    q, k, v = _random((2, 4, 5, 16), 5), _random((2, kv_heads, 9, 16), 6), _random((2, kv_heads, 9, 16), 7)
    mask = _masks(5, 9)[mask_name]
    reference = mlx_only(ops.attention, q, k, v, 0.25, mask)
    np.testing.assert_allclose(np.array(host_ops.attention(q, k, v, 0.25, mask)), np.array(reference),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.cpu_host
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
    np.testing.assert_allclose(pooled, np.array(mlx_only(ops.attention, q, k, v, 0.25, mask)),
                               rtol=1e-4, atol=1e-5)


def test_attention_parts_cover_every_query_head_once():
    for batch, kv_heads, groups, wanted in [(1, 1, 8, 2), (1, 4, 2, 2), (2, 1, 4, 8), (1, 2, 3, 5), (1, 8, 1, 2)]:
        parts = host_ops.attention_parts(batch, kv_heads, groups, wanted)
        heads = [(b, h) for b, kv, first, end in parts for h in range(first, end)]
        assert sorted(heads) == [(b, h) for b in range(batch) for h in range(kv_heads * groups)]
        assert all(kv * groups <= first < end <= (kv + 1) * groups for _, kv, first, end in parts)
        assert len(parts) >= min(wanted, batch * kv_heads * groups)


def _reference_rope(x: np.ndarray, omega: np.ndarray, offset: int) -> np.ndarray:
    """The reference's rotate-half RoPE: its float32 angles (position * omega in float32), the rest in float64."""
    half = omega.shape[0]
    angles = (np.arange(offset, offset + x.shape[-2], dtype=np.float32)[:, None] * omega[None]).astype(np.float64)
    x = x.astype(np.float64)
    x1, x2 = x[..., :half], x[..., half:2 * half]
    rotated = np.concatenate([x1 * np.cos(angles) - x2 * np.sin(angles), x2 * np.cos(angles) + x1 * np.sin(angles)],
                             axis=-1)
    return np.concatenate([rotated, x[..., 2 * half:]], axis=-1)


@pytest.mark.cpu_host
@pytest.mark.parametrize("offset", [0, 120, 3_000, 30_000])
@pytest.mark.parametrize("kind", ["default", "proportional", "partial"])
def test_host_rope_matches_the_references_angles_at_every_position(kind, offset):
    # default: DiffusionGemma's sliding layers; proportional: its full layers (64 of 256 pairs turn, exponents
    # over the whole head); partial: LLaDA-2's rotary_dim < head_dim (the channels past it pass through).
    dims, omega = {"default": (64, host_ops.rope_inverse_frequencies(10_000.0, 64)),
                   "proportional": (128, host_ops.rope_inverse_frequencies(1e6, 128, rotated_pairs=16)),
                   "partial": (64, host_ops.rope_inverse_frequencies(600_000.0, 32))}[kind]
    x = np.random.default_rng(offset).standard_normal((1, 3, 40, dims)).astype(np.float32)
    ours = np.array(host_ops.rope(mx.array(x), omega, offset))
    np.testing.assert_allclose(ours, _reference_rope(x, omega, offset), atol=1e-6, rtol=0)
    if kind == "partial":
        np.testing.assert_array_equal(ours[..., 32:], x[..., 32:])
    if kind == "proportional":   # unturned pairs are the input, bit for bit
        np.testing.assert_array_equal(ours[..., 16:64], x[..., 16:64])
        np.testing.assert_array_equal(ours[..., 80:], x[..., 80:])


@pytest.mark.cpu_host
def test_host_rope_agrees_with_mlx_where_mlxs_approximation_is_close(mlx_only):
    x = mx.array(np.random.default_rng(1).standard_normal((1, 4, 64, 64)).astype(np.float32))
    ours = host_ops.rope(x, host_ops.rope_inverse_frequencies(10_000.0, 64), 100)
    theirs = mlx_only(ops.rope, x, 100, omega=ops.rope_inverse_frequencies(10_000.0, 64), dims=64, base=10_000.0)
    np.testing.assert_allclose(np.array(ours), np.array(theirs), atol=1e-4, rtol=0)


def test_the_seam_leaves_rope_to_mlx_off_the_host_path(mlx_only):
    x = _random((1, 2, 6, 8), 11)
    seam = mlx_only(ops.rope, x, 5, omega=ops.rope_inverse_frequencies(10_000.0, 8), dims=8, base=10_000.0)
    assert mx.array_equal(seam, mx.fast.rope(x, 8, traditional=False, base=10_000.0, scale=1.0, offset=5))


# By how much MLX's own RoPE (the pure-MLX path: Metal, CUDA, a CPU with the host path off) departs from the
# reference's float32 angles as positions grow, measured on the CPU backend: max abs error over unit-variance
# heads, 64 dims, base 10,000 (MLX 0.32): 7.8e-6 at position 0, 7.6e-4 at 3,000, 4.6e-3 at 30,000, where the
# host path's RoPE stays at 3e-7 at every one of them (above). MLX's error grows with the position, by design
# of its fast kernel (it computes the angles its own way). Bounds are 2-4x the measurement, so that another MLX
# build's rounding passes while a real regression (a wrong offset, wrong frequencies: errors of order 1) fails.
MLX_ROPE_ERROR_BOUND = {0: 3e-5, 3_000: 2e-3, 30_000: 1e-2}


@pytest.mark.parametrize("offset", sorted(MLX_ROPE_ERROR_BOUND))
def test_mlx_rope_at_long_positions_stays_within_its_measured_drift(offset, mlx_only):
    omega = ops.rope_inverse_frequencies(10_000.0, 64)
    x = np.random.default_rng(offset + 1).standard_normal((1, 3, 40, 64)).astype(np.float32)
    theirs = np.array(mlx_only(ops.rope, mx.array(x), offset, omega=omega, dims=64, base=10_000.0))
    error = float(np.abs(theirs - _reference_rope(x, omega, offset)).max())
    assert error < MLX_ROPE_ERROR_BOUND[offset], f"MLX RoPE at position {offset}: max error {error:.2e}"


@pytest.mark.parametrize("value, host", [("0", False), ("1", True), ("", True)])
def test_the_environment_switch_decides_the_path_for_the_whole_process(monkeypatch, value, host):
    from engine.cpu import device

    monkeypatch.setenv(switch.ENV, value)
    assert switch.requested() is host
    assert device.host_path() is (host and mx.default_device() == mx.cpu)
    with switch.disabled():
        assert not switch.requested() and not device.host_path()
    assert switch.requested() is host        # disabled() puts it back
