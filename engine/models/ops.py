"""The op seam: the few network ops whose CPU version differs from MLX's (the gates, attention, RoPE, the routed
experts and their gather-matmuls). The models call these and carry no device checks; each one picks, per call,
the host version (`engine.cpu`, where MLX runs on the CPU and the host path is on) or MLX's own, which is what
Metal and CUDA run and what a CPU runs with `DIFFUSION_CHAT_HOST_OPS=0` or inside `engine.cpu.switch.disabled()`.
"""

from __future__ import annotations

import math
from typing import Callable

import mlx.core as mx
import numpy as np

from ..cpu import device, experts as host_experts, kernels, ops as host

# The host versions' one helper the models use to build their RoPE frequencies (pure NumPy, any backend).
rope_inverse_frequencies = host.rope_inverse_frequencies


@mx.compile
def _geglu_mlx(gate: mx.array, up: mx.array) -> mx.array:
    return 0.5 * gate * (1.0 + mx.tanh(math.sqrt(2.0 / math.pi) * (gate + 0.044715 * gate * gate * gate))) * up


@mx.compile
def _swiglu_mlx(gate: mx.array, up: mx.array) -> mx.array:
    return gate * mx.sigmoid(gate) * up


def geglu(gate: mx.array, up: mx.array) -> mx.array:
    """gelu_tanh(gate) * up."""
    return host.geglu(gate, up) if device.host_path() else _geglu_mlx(gate, up)


def swiglu(gate: mx.array, up: mx.array) -> mx.array:
    """silu(gate) * up."""
    return host.swiglu(gate, up) if device.host_path() else _swiglu_mlx(gate, up)


def attention(queries: mx.array, keys: mx.array, values: mx.array, scale: float, mask=None) -> mx.array:
    """`mx.fast.scaled_dot_product_attention(queries, keys, values, scale, mask)`: [B, H, T, D] queries, [B, H_kv,
    S, D] keys / values (grouped heads), mask None, "causal", or bool / additive [.., T, S]."""
    if device.host_path():
        return host.attention(queries, keys, values, scale, mask)
    return mx.fast.scaled_dot_product_attention(queries, keys, values, scale=scale, mask=mask)


def before_rope(*arrays: mx.array) -> None:
    """Called with a layer's queries, keys and values before their RoPE: the host copies them out next, so it
    evaluates the three in one go (one wake of MLX's BLAS pool, not one per copy); MLX needs nothing."""
    if device.host_path():
        mx.eval(*arrays)


def rope(x: mx.array, offset: int, *, omega: np.ndarray, dims: int, base: float | None = None,
         freqs: mx.array | None = None) -> mx.array:
    """Rotate-half RoPE of [B, H, T, D] heads at positions offset, offset + 1, ... over the first `dims`
    channels: MLX's `mx.fast.rope(x, dims, base=base, freqs=freqs)`, or on the host the same rotation by the
    float32 angles pos * omega (`omega`: `rope_inverse_frequencies` of the same base, 0 for pairs not turned)."""
    if device.host_path():
        return host.rope(x, omega, offset)
    return mx.fast.rope(x, dims, traditional=False, base=base, scale=1.0, offset=offset, freqs=freqs)


def routed_experts(x: mx.array, indices: mx.array, weights: mx.array, gate_up, down, gate: str,
                   mlx: Callable[[], mx.array]) -> mx.array:
    """sum_j weights[t, j] * down_e(gate(gate_up_e(x[t]))) for e = indices[t, j]: [N, H] -> [N, H].

    `gate_up` is one stacked projection whose output halves are gate and up; `gate` is "geglu" or "swiglu";
    `mlx()` computes the same with MLX's gather-matmuls. The host does the whole block with float expert weights
    (float32 result); quantized experts stay with MLX's gather_qmm."""
    if device.host_path() and host_experts.float_weights(gate_up, down):
        return host_experts.routed_experts(x, indices, weights, gate_up, down, _HOST_GATES[gate])
    return mlx()


_HOST_GATES = {"geglu": kernels.geglu, "swiglu": kernels.swiglu}


def gather_matmul(x: mx.array, weight: mx.array, indices: mx.array, sorted_indices: bool) -> mx.array:
    """x @ weight[indices].T per token-expert pair (MLX's gather_mm). MLX's CPU gather_mm accepts float32 only:
    other inputs are upcast there (the loader keeps float weights in float32 on the CPU anyway)."""
    if device.on_cpu() and (x.dtype != mx.float32 or weight.dtype != mx.float32):
        x, weight = x.astype(mx.float32), weight.astype(mx.float32)
    return mx.gather_mm(x, weight.swapaxes(-1, -2), rhs_indices=indices, sorted_indices=sorted_indices)


def gather_quantized_matmul(x: mx.array, weight: mx.array, scales: mx.array, biases: mx.array | None,
                            indices: mx.array, *, group_size: int, bits: int, mode: str,
                            sorted_indices: bool) -> mx.array:
    """MLX's gather_qmm (transposed); float32 inputs on the CPU, as `gather_matmul`."""
    if device.on_cpu() and x.dtype != mx.float32:
        x = x.astype(mx.float32)
    return mx.gather_qmm(x, weight, scales, biases, rhs_indices=indices, transpose=True, group_size=group_size,
                         bits=bits, mode=mode, sorted_indices=sorted_indices)
