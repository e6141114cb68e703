"""Shared layers: the expert gather-matmuls never crash on bf16 where MLX's CPU kernels take float32 only (the
host expert block has its own tests: tests/test_host_experts.py)."""

import mlx.core as mx
import numpy as np

from engine.models.layers import SwitchLinear, gather_sort, scatter_unsort


def test_quantized_experts_take_bf16_tokens():
    layer = SwitchLinear(64, 32, 4).to_quantized(group_size=32, bits=8)
    tokens = mx.random.normal((12, 1, 1, 64), key=mx.random.key(0))
    indices = mx.random.randint(0, 4, (12, 2), key=mx.random.key(1))
    full = layer(tokens, indices)
    low = layer(tokens.astype(mx.bfloat16), indices)   # upcast on the CPU instead of a crash
    assert low.shape == full.shape == (12, 2, 1, 32)
    np.testing.assert_allclose(np.array(low.astype(mx.float32)), np.array(full), atol=0.1)


def test_sorted_and_unsorted_expert_paths_agree_in_bf16_on_the_cpu_backend():
    layer = SwitchLinear(16, 8, 4)
    layer.weight = layer.weight.astype(mx.bfloat16)
    tokens = mx.random.normal((20, 1, 1, 16), key=mx.random.key(3)).astype(mx.bfloat16)
    indices = mx.random.randint(0, 4, (20, 2), key=mx.random.key(4))
    direct = layer(tokens, indices)  # gather_mm is float32-only on CPU: the layer upcasts instead of crashing
    x, sorted_ids, inverse = gather_sort(tokens, indices)
    grouped = scatter_unsort(layer(x, sorted_ids, sorted_indices=True), inverse, indices.shape)
    assert direct.dtype == mx.float32
    np.testing.assert_allclose(np.array(grouped), np.array(direct), atol=1e-4)
