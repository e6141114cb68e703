"""The host (NumPy) versions of the network's element-wise transcendental ops (the GeGLU / SwiGLU gates), its
attention and its RoPE, for MLX on the CPU. `engine.models.ops` decides when they run.

MLX's CPU backend evaluates tanh / exp one element at a time without SIMD, so on a CPU these few ops cost as
much as all the matrix products of a layer (bench/README.md, "host ops"). The layers' matrix products stay in
MLX (BLAS) and only the arrays between them make the round trip, except attention's small per-head products
(see `attention`). Each takes and returns MLX arrays.
"""

from __future__ import annotations

import math
from functools import lru_cache

import mlx.core as mx
import numpy as np

from . import kernels, pool

# Below this many attention scores one thread is quicker than handing parts to the host pool.
PARALLEL_MIN_SCORES = 1 << 16

def numpy_of(x: mx.array) -> np.ndarray:
    # NumPy has no bfloat16: such arrays are widened by MLX first (float32 / float16 cross without a cast)
    if x.dtype not in (mx.float32, mx.float16):
        x = x.astype(mx.float32)
    return np.array(x, dtype=np.float32)


def geglu(gate: mx.array, up: mx.array) -> mx.array:
    """gelu_tanh(gate) * up."""
    mx.eval(gate, up)  # one evaluation of both projections (the BLAS pool kept busy), then two plain copies
    return mx.array(kernels.geglu(numpy_of(gate), numpy_of(up))).astype(gate.dtype)


def swiglu(gate: mx.array, up: mx.array) -> mx.array:
    """silu(gate) * up."""
    mx.eval(gate, up)
    return mx.array(kernels.swiglu(numpy_of(gate), numpy_of(up))).astype(gate.dtype)


def attention(queries: mx.array, keys: mx.array, values: mx.array, scale: float, mask=None) -> mx.array:
    """`mx.fast.scaled_dot_product_attention(queries, keys, values, scale, mask)` for [B, H, T, D] queries and
    [B, H_kv, S, D] keys/values (grouped heads), mask None, "causal", or bool / additive [.., T, S].

    The whole of it runs in NumPy, split by key/value head (and, where one head serves many query heads, by
    runs of those heads) across the host pool: each part's two products and softmax run on one thread. Why not
    MLX's products around a NumPy softmax: these [T, D] x [D, S] products are too small for MLX's batched
    matmul, and that softmax ran on one core (bench/README.md). Each part's arithmetic is the same however the
    parts are spread, so the result does not depend on the thread count."""
    batch, heads, length, dim = queries.shape
    kv_heads, span = keys.shape[1], keys.shape[2]
    groups = heads // kv_heads
    mx.eval(queries, keys, values)   # one evaluation, not one per copy below (each wakes MLX's BLAS pool)
    q, k, v = numpy_of(queries), numpy_of(keys), numpy_of(values)
    if scale != 1.0:
        q = q * np.float32(scale)
    visible = _visible(mask, length, span)
    if visible is not None:
        visible = np.broadcast_to(visible, (batch, heads, length, span))
    out = np.empty((batch, heads, length, v.shape[-1]), dtype=np.float32)

    def run(part: tuple[int, int, int, int]) -> None:
        b, kv, first, last = part               # query heads [first, last) all read key/value head kv
        s = q[b, first:last].reshape(-1, dim) @ k[b, kv].T
        s = s.reshape(last - first, length, span)
        if visible is not None:
            if visible.dtype == np.bool_:
                s = np.where(visible[b, first:last], s, np.float32(-np.inf))
            else:
                s += visible[b, first:last]
        s -= s.max(axis=-1, keepdims=True)
        kernels.exp_inplace(s)
        s /= s.sum(axis=-1, keepdims=True)
        out[b, first:last] = (s.reshape(-1, span) @ v[b, kv]).reshape(last - first, length, -1)

    parts = attention_parts(batch, kv_heads, groups, pool.workers())
    if batch * heads * length * span < PARALLEL_MIN_SCORES:
        for part in parts:
            run(part)
    else:
        pool.run_parts(run, parts)
    return mx.array(out).astype(values.dtype)


def rope_inverse_frequencies(base: float, dims: int, rotated_pairs: int | None = None) -> np.ndarray:
    """omega_j = 1 / base^(2j / dims) for the rotate-half pairs (j, j + dims/2), computed in float32 as the
    reference implementations do; pairs from `rotated_pairs` on get 0 (not rotated: proportional RoPE)."""
    exponents = np.arange(0, dims, 2, dtype=np.float32) / np.float32(dims)
    omega = (np.float32(1.0) / np.power(np.float32(base), exponents)).astype(np.float32)
    if rotated_pairs is not None:
        omega[rotated_pairs:] = 0.0
    return omega


def rope(x: mx.array, omega: np.ndarray, offset: int) -> mx.array:
    """Rotate-half RoPE of [B, H, T, D] heads at positions offset, offset + 1, ...: dims j and j + R/2 (R = 2 *
    len(omega), the rotated width; channels past R pass through) turn by the angle pos * omega_j.

    Why not mx.fast.rope on the CPU: it is slow there, and its result drifts from the reference's with the
    position (tests/test_host_ops.py measures by how much); here NumPy's cos / sin of the same float32 angles as
    the reference."""
    a = numpy_of(x)
    half = omega.shape[0]
    cos, sin = _rope_tables(omega.tobytes(), offset, a.shape[-2])
    x1, x2 = a[..., :half], a[..., half:2 * half]
    out = np.empty(a.shape, np.float32)
    first, second = out[..., :half], out[..., half:2 * half]
    np.multiply(x1, cos, out=first)
    first -= x2 * sin
    np.multiply(x2, cos, out=second)
    second += x1 * sin
    out[..., 2 * half:] = a[..., 2 * half:]
    return mx.array(out).astype(x.dtype)


@lru_cache(maxsize=64)
def _rope_tables(omega_bytes: bytes, offset: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    # A block's every step and every layer of a kind share one table: cached by (frequencies, offset, length).
    omega = np.frombuffer(omega_bytes, dtype=np.float32)
    angles = np.arange(offset, offset + length, dtype=np.float32)[:, None] * omega[None, :]   # float32, as theirs
    return np.cos(angles), np.sin(angles)


def attention_parts(batch: int, kv_heads: int, groups: int, wanted: int) -> list[tuple[int, int, int, int]]:
    """(batch row, kv head, first query head, end): every key/value head's query heads, cut into runs of
    about equal length so that there are at least `wanted` parts where the heads allow it."""
    runs = max(1, min(groups, -(-wanted // (batch * kv_heads))))
    cuts = [round(i * groups / runs) for i in range(runs + 1)]
    return [(b, kv, kv * groups + lo, kv * groups + hi)
            for b in range(batch) for kv in range(kv_heads) for lo, hi in zip(cuts, cuts[1:])]


def _visible(mask, length: int, span: int) -> np.ndarray | None:
    """The mask as NumPy: bool (True = may attend) or additive float32, or None for none."""
    if mask is None:
        return None
    if isinstance(mask, str):  # "causal": query i sees keys up to its own position, counted from the end
        return np.arange(span)[None, :] <= (np.arange(length)[:, None] + span - length)
    return np.array(mask) if mask.dtype == mx.bool_ else numpy_of(mask)
