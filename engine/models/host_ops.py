"""The network's element-wise transcendental ops (the GeGLU / SwiGLU gates, attention's softmax) done with NumPy
when MLX runs on the CPU.

MLX's CPU backend evaluates tanh / exp one element at a time without SIMD (measured here: ~15 ns per element;
NumPy's vectorised versions: ~1-2 ns), so on a CPU these few ops cost as much as all the matrix products of a
layer (mid-size DiffusionGemma: a 4.7 ms GeGLU and a 9.2 ms attention softmax per layer, against 1.5 ms and
1.2 ms with NumPy, copies included). The matrix products stay in MLX (BLAS); only the arrays between them make
the round trip. On Metal / CUDA, or while MLX traces a transformation (a gradient: `enabled = False`), the same
maths runs in MLX.
"""

from __future__ import annotations

import math

import mlx.core as mx
import numpy as np

from .. import _blas

enabled = True  # set False where MLX must see the whole graph (mx.grad, mx.compile of a whole network)

_GELU_C = np.float32(math.sqrt(2.0 / math.pi))


def on_cpu() -> bool:
    return mx.default_device() == mx.cpu


def host_enabled() -> bool:
    if enabled and on_cpu():
        _blas.single_thread_numpy_blas()  # once (cached): NumPy's and MLX's BLAS pools must not fight
        return True
    return False


def numpy_of(x: mx.array) -> np.ndarray:
    # NumPy has no bfloat16: such arrays are widened by MLX first (float32 / float16 cross without a cast)
    if x.dtype not in (mx.float32, mx.float16):
        x = x.astype(mx.float32)
    return np.array(x, dtype=np.float32)


@mx.compile
def _geglu_mlx(gate: mx.array, up: mx.array) -> mx.array:
    return 0.5 * gate * (1.0 + mx.tanh(math.sqrt(2.0 / math.pi) * (gate + 0.044715 * gate * gate * gate))) * up


def geglu(gate: mx.array, up: mx.array) -> mx.array:
    """gelu_tanh(gate) * up."""
    if not host_enabled():
        return _geglu_mlx(gate, up)
    return mx.array(geglu_numpy(numpy_of(gate), numpy_of(up))).astype(gate.dtype)


def geglu_numpy(g: np.ndarray, up: np.ndarray) -> np.ndarray:
    """gelu_tanh(g) * up for float32 NumPy arrays, in a new array (the inputs are left as they are)."""
    inner = g * g
    inner *= np.float32(0.044715)
    inner += np.float32(1.0)
    inner *= g
    inner *= _GELU_C
    np.tanh(inner, out=inner)
    inner += np.float32(1.0)
    inner *= g
    inner *= np.float32(0.5)
    inner *= up
    return inner


@mx.compile
def _swiglu_mlx(gate: mx.array, up: mx.array) -> mx.array:
    return gate * mx.sigmoid(gate) * up


def swiglu(gate: mx.array, up: mx.array) -> mx.array:
    """silu(gate) * up."""
    if not host_enabled():
        return _swiglu_mlx(gate, up)
    return mx.array(swiglu_numpy(numpy_of(gate), numpy_of(up))).astype(gate.dtype)


def swiglu_numpy(g: np.ndarray, up: np.ndarray) -> np.ndarray:
    """silu(g) * up for float32 NumPy arrays, in a new array."""
    s = np.negative(g)
    np.exp(s, out=s)
    s += np.float32(1.0)
    np.divide(g, s, out=s)
    s *= up
    return s


def attention(queries: mx.array, keys: mx.array, values: mx.array, scale: float, mask=None) -> mx.array:
    """`mx.fast.scaled_dot_product_attention(queries, keys, values, scale, mask)` for [B, H, T, D] queries and
    [B, H_kv, S, D] keys/values (grouped heads), mask None, "causal", or bool / additive [.., T, S]."""
    if not host_enabled():
        return mx.fast.scaled_dot_product_attention(queries, keys, values, scale=scale, mask=mask)
    batch, heads, length, dim = queries.shape
    groups = heads // keys.shape[1]
    q = queries.reshape(batch, keys.shape[1], groups * length, dim)  # each kv head's query heads, stacked
    scores = (q * scale) @ keys.swapaxes(-1, -2)
    s = numpy_of(scores).reshape(batch, heads, length, keys.shape[2])
    if mask is not None:
        if isinstance(mask, str):  # "causal": query i sees keys up to its own position, counted from the end
            span = keys.shape[2]
            visible = np.arange(span)[None, :] <= (np.arange(length)[:, None] + span - length)
        else:
            visible = np.array(mask) if mask.dtype == mx.bool_ else numpy_of(mask)
        if visible.dtype == np.bool_:
            s = np.where(visible, s, -np.inf)
        else:
            s = s + visible.astype(np.float32)
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    weights = mx.array(s.reshape(batch, keys.shape[1], groups * length, keys.shape[2])).astype(values.dtype)
    return (weights @ values).reshape(batch, heads, length, dim)
