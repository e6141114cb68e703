"""Shared layers: the CPU per-expert path agrees with MLX's gather_mm and never crashes on bf16 (the host expert
block has its own tests: tests/test_host_experts.py)."""

import mlx.core as mx
import numpy as np

from engine.models.layers import SwitchLinear, gather_sort, per_expert_matmul, scatter_unsort


def test_per_expert_matmul_equals_gather_mm():
    weight = mx.random.normal((6, 24, 16), key=mx.random.key(0))
    x = mx.random.normal((40, 1, 16), key=mx.random.key(1))
    indices = mx.sort(mx.random.randint(0, 6, (40,), key=mx.random.key(2)))
    expected = mx.gather_mm(x, weight.swapaxes(-1, -2), rhs_indices=indices, sorted_indices=True)
    got = per_expert_matmul(x, weight, indices)
    assert got.shape == expected.shape == (40, 1, 24)
    np.testing.assert_allclose(np.array(got), np.array(expected), atol=1e-4)


def test_sorted_and_unsorted_expert_paths_agree_in_bf16_on_cpu():
    layer = SwitchLinear(16, 8, 4)
    layer.weight = layer.weight.astype(mx.bfloat16)
    tokens = mx.random.normal((20, 1, 1, 16), key=mx.random.key(3)).astype(mx.bfloat16)
    indices = mx.random.randint(0, 4, (20, 2), key=mx.random.key(4))
    direct = layer(tokens, indices)  # gather_mm is float32-only on CPU: the layer upcasts instead of crashing
    x, sorted_ids, inverse = gather_sort(tokens, indices)
    grouped = scatter_unsort(layer(x, sorted_ids, sorted_indices=True), inverse, indices.shape)
    assert direct.dtype == mx.float32
    np.testing.assert_allclose(np.array(grouped), np.array(direct), atol=1e-4)
