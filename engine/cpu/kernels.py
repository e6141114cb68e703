"""The host sampler's and network's exp and tanh as Numba kernels that LLVM vectorises.

Why: NumPy's float32 `exp` and `tanh` are vectorised only on AVX-512 CPUs; elsewhere they run at libm's scalar
speed, and at Gemma 4's 262,144 ids they were most of a step's analysis (bench/README.md, "host kernels"). The
exp here is a Cody-Waite range reduction to |r| <= ln2 / 2 and a degree-6 polynomial, within 1e-7 relative of
float64 `exp` (NumPy's: 2e-7). tanh uses it (1 - 2 / (e^2y + 1)), or an odd polynomial below 0.625 where that
would cancel. Exact to float32 rounding, like NumPy's, though not bit-equal to NumPy's; the same value gives the
same bits wherever it sits (tested), so rows split over threads give one thread's bits.

Without Numba (the `cpu` extra installs it; a CUDA install or a Python it does not support yet has none),
callers keep NumPy's functions (`available()` is False).
"""

from __future__ import annotations

import math

import numpy as np

try:  # pragma: no branch - which side runs depends on the installation
    import numba
except ImportError:  # pragma: no cover - Numba is a dependency on Linux
    numba = None

# No fastmath flags at all, so LLVM must round every operation as written (IEEE), in a vectorised loop's body, its
# scalar remainder and every specialisation of a kernel (read-only MLX buffers, other layouts) alike: the same
# logit gives the same bits wherever it is, and a sampled token cannot depend on where it sat. Both looser
# builds tried broke the test that a server's answer equals a local run's: fastmath (reassociation) and even
# "contract" alone (LLVM may fuse a * b + c into one FMA in one copy of the code and not in another), though
# "contract" made the polynomials ~1.4x quicker. No "nnan"/"ninf" either way: -inf must give 0, NaN stay NaN.
# error_model="numpy": no ZeroDivisionError check, whose branch stops LLVM vectorising a division.


def available() -> bool:
    return numba is not None


def _jit(function):
    if numba is None:
        return function
    return numba.njit(error_model="numpy", cache=True, nogil=True, inline="always")(function)


def _kernel(function):
    if numba is None:
        return function
    return numba.njit(error_model="numpy", cache=True, nogil=True)(function)


_LOG2E = np.float32(1.0 / math.log(2.0))
_LN2_HI = np.float32(0.693359375)        # ln 2 split in two (Cody-Waite): k * hi is exact for |k| < 2^12
_LN2_LO = np.float32(-2.12194440e-4)
_EXP_LOW = np.float32(-87.3)             # below: 0 (float32 exp underflows there; -inf lands here too)
_EXP_HIGH = np.float32(88.7)
_P = tuple(np.float32(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                                   1.6666665459e-1, 5.0000001201e-1))
_T = tuple(np.float32(c) for c in (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
                                   -3.33332819422e-1))
_ONE, _TWO, _HALF, _SMALL = np.float32(1.0), np.float32(2.0), np.float32(0.5), np.float32(0.625)
_GELU_C, _GELU_CUBIC = np.float32(math.sqrt(2.0 / math.pi)), np.float32(0.044715)


@_jit
def exp32(x):
    """exp(x) for a float32 x: 2^k * e^r with r = x - k ln 2, |r| <= ln2 / 2."""
    c = min(max(x, _EXP_LOW), _EXP_HIGH)
    k = np.floor(c * _LOG2E + _HALF)     # np.floor keeps float32 (math.floor would widen to int64)
    r = c - k * _LN2_HI - k * _LN2_LO
    p = _P[0]
    p = p * r + _P[1]
    p = p * r + _P[2]
    p = p * r + _P[3]
    p = p * r + _P[4]
    p = p * r + _P[5]
    p = p * r * r + r + _ONE
    scale = np.int32((np.int32(k) + np.int32(127)) << 23)
    value = p * scale.view(np.float32)
    return np.float32(0.0) if x < _EXP_LOW else value


@_jit
def tanh32(y):
    t = abs(y)
    s = t * t
    near = ((((_T[0] * s + _T[1]) * s + _T[2]) * s + _T[3]) * s + _T[4]) * s * t + t
    far = _ONE - _TWO / (exp32(_TWO * t) + _ONE)
    value = near if t < _SMALL else far
    return -value if y < 0 else value


def exp_inplace(x: np.ndarray) -> None:
    """x = exp(x) for a float32 array: the kernel where it is available and x is C-contiguous, else NumPy's."""
    if available() and x.flags.c_contiguous:
        _exp_self(x.reshape(-1))
    else:
        np.exp(x, out=x)


def tanh_inplace(x: np.ndarray) -> None:
    """x = tanh(x) for a float32 array: the kernel where it is available and x is C-contiguous, else NumPy's."""
    if available() and x.flags.c_contiguous:
        _tanh_self(x.reshape(-1))
    else:
        np.tanh(x, out=x)


def geglu(g: np.ndarray, up: np.ndarray) -> np.ndarray:
    """gelu_tanh(g) * up for float32 arrays of one shape, in a new array: one kernel pass where it is available
    and both are C-contiguous, else ten NumPy passes in the same order (so the same bits where tanh agrees)."""
    out = np.empty(g.shape, np.float32)
    if available() and g.flags.c_contiguous and up.flags.c_contiguous:
        _geglu_flat(g.reshape(-1), up.reshape(-1), out.reshape(-1))
        return out
    np.multiply(g, g, out=out)
    out *= _GELU_CUBIC
    out += _ONE
    out *= g
    out *= _GELU_C
    tanh_inplace(out)
    out += _ONE
    out *= g
    out *= _HALF
    out *= up
    return out


def swiglu(g: np.ndarray, up: np.ndarray) -> np.ndarray:
    """silu(g) * up = g / (1 + exp(-g)) * up for float32 arrays of one shape, in a new array (kernel or NumPy,
    as `geglu`)."""
    out = np.empty(g.shape, np.float32)
    if available() and g.flags.c_contiguous and up.flags.c_contiguous:
        _swiglu_flat(g.reshape(-1), up.reshape(-1), out.reshape(-1))
        return out
    np.negative(g, out=out)
    exp_inplace(out)
    out += _ONE
    np.divide(g, out, out=out)
    out *= up
    return out


# Flat loops: one compiled specialisation serves arrays of every rank (Numba compiles one per rank and layout).
# In place, one array argument: a kernel given the same array as its x and its out is sent to its scalar version
# by LLVM's run-time overlap check (several times slower).
@_kernel
def _exp_self(x):
    for i in range(x.size):
        x[i] = exp32(x[i])


@_kernel
def _tanh_self(x):
    for i in range(x.size):
        x[i] = tanh32(x[i])


# The gates in one pass, in the NumPy fallback's order of operations (which takes ten passes and ten Python calls).
@_kernel
def _geglu_flat(g, up, out):
    for i in range(g.size):
        x = g[i]
        inner = x * x
        inner = inner * _GELU_CUBIC
        inner = inner + _ONE
        inner = inner * x
        inner = inner * _GELU_C
        t = tanh32(inner) + _ONE
        t = t * x
        t = t * _HALF
        out[i] = t * up[i]


@_kernel
def _swiglu_flat(g, up, out):
    for i in range(g.size):
        x = g[i]
        out[i] = x / (exp32(-x) + _ONE) * up[i]


def softcapped(logits, inverse_cap, out_scale, out) -> None:
    """out = tanh(logits * inverse_cap) * out_scale: the network's softcap and the temperature, one pass
    (`out` a new C-contiguous float32 array of the logits' shape)."""
    _softcapped_flat(np.ascontiguousarray(logits).reshape(-1), np.float32(inverse_cap), np.float32(out_scale),
                     out.reshape(-1))


@_kernel
def _softcapped_flat(logits, inverse_cap, out_scale, out):
    # One flat loop, not rows x vocabulary: LLVM vectorises one long loop better than many
    for i in range(logits.size):
        out[i] = tanh32(logits[i] * inverse_cap) * out_scale


@_kernel
def exp_shifted(z, top, out):
    """out = exp(z - top[row]) per row (the softmax's numerator; the sums stay with NumPy's pairwise sum)."""
    rows, vocab = z.shape
    for row in range(rows):
        peak = top[row]
        for v in range(vocab):
            out[row, v] = exp32(z[row, v] - peak)


def warm_up() -> None:
    """Compile (or read from Numba's disk cache) the kernels in the forms the engine calls them, so that a model
    load pays for it and not its first denoising step. Called by `engine.load` on the host path; does nothing
    without Numba."""
    if not available():
        return
    rows = np.zeros((2, 8), np.float32)
    out = np.empty_like(rows)
    exp_inplace(out)
    tanh_inplace(out)
    geglu(rows, rows)
    swiglu(rows, rows)
    exp_shifted(rows, np.zeros(2, np.float32), out)
    softcapped(rows, 1.0, 1.0, out)
