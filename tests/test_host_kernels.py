"""engine.host_kernels: the Numba exp / tanh are float32-exact, give the same bits wherever a value sits, and the
sampler's analysis with them agrees with its NumPy passes."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

numba = pytest.importorskip("numba")
from conftest import CHECKPOINTS

import engine
from engine.cpu import kernels as host_kernels
from engine.generation import fused

pytestmark = [pytest.mark.skipif(not host_kernels.available(), reason="Numba comes with the cpu extra"),
              pytest.mark.cpu_host]

CAP = np.float32(30.0)


def _logits(shape, seed=0, scale=40.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def test_exp_is_within_a_float32_ulp_of_float64_exp():
    # the normal range: below -87.3 the kernel gives 0 where float32 would be subnormal
    x = np.concatenate([np.linspace(-87, 88, 200_001, dtype=np.float32), np.clip(_logits(10_000).ravel(), -87, 88)])
    out = x.copy()
    host_kernels.exp_inplace(out)
    exact = np.exp(x.astype(np.float64))
    assert np.max(np.abs(out - exact) / exact) < 2.5e-7


def test_exp_of_minus_infinity_and_underflow_is_zero_and_nan_stays_nan():
    x = np.array([-np.inf, -1e4, -90.0, np.nan, 0.0], np.float32)
    out = x.copy()
    host_kernels.exp_inplace(out)
    assert out[:3].tolist() == [0.0, 0.0, 0.0] and np.isnan(out[3]) and out[4] == 1.0


def test_tanh_is_as_close_to_float64_tanh_as_numpys():
    y = np.concatenate([np.linspace(-4, 4, 200_001, dtype=np.float32), np.array([-np.inf, np.inf, 1e-30, -1e-30,
                                                                                 60.0], np.float32)])
    out = y.copy()
    host_kernels.tanh_inplace(out)
    exact = np.tanh(y.astype(np.float64))
    assert np.max(np.abs(out - exact)) < 1.5e-7
    assert out[-5:-3].tolist() == [-1.0, 1.0] and out[-1] == 1.0
    assert np.max(np.abs(out[:-5] - exact[:-5]) / np.maximum(np.abs(exact[:-5]), 1e-30)) < 5e-7   # near 0 too


def test_softcap_matches_float64():
    x = _logits((3, 1000))
    out = np.empty_like(x)
    host_kernels.softcapped(x, np.float32(1 / CAP), np.float32(CAP / 0.7), out)
    exact = np.tanh(x.astype(np.float64) / 30.0) * 30.0 / 0.7
    assert np.max(np.abs(out - exact)) < 1e-5


def test_a_value_gets_the_same_bits_in_a_vector_loop_alone_read_only_or_strided():
    # The bug this guards: under fastmath, LLVM's vectorised body and scalar remainder (and the specialisations
    # for read-only or strided arrays) rounded differently, so the same logits sampled different tokens in the
    # server's engine thread and in a local run.
    x = _logits((3, 517), seed=2)
    read_only = x.copy()
    read_only.flags.writeable = False
    strided = np.empty((3, 1034), np.float32)
    strided[:, ::2] = x
    variants = [x, read_only, strided[:, ::2]]
    capped = []
    for logits in variants:
        out = np.empty_like(x)
        host_kernels.softcapped(logits, np.float32(1 / CAP), CAP, out)
        capped.append(out)
    alone = np.empty((1, 1), np.float32)
    one_by_one = np.empty_like(x)
    for (row, column), value in np.ndenumerate(x):
        host_kernels.softcapped(np.full((1, 1), value, np.float32), np.float32(1 / CAP), CAP, alone)
        one_by_one[row, column] = alone[0, 0]
    for out in capped[1:] + [one_by_one]:
        np.testing.assert_array_equal(out, capped[0])
    # The same for exp (through the softmax numerator) and tanh: a whole row against each value alone.
    top = x.max(axis=-1)
    numerators, alone_numerators = np.empty_like(x), np.empty_like(x)
    host_kernels.exp_shifted(x, top, numerators)
    tanhs, alone_tanhs = x / CAP, np.empty_like(x)
    host_kernels.tanh_inplace(tanhs)
    for (row, column), value in np.ndenumerate(x):
        single = np.full((1, 1), value, np.float32)
        host_kernels.exp_shifted(single, top[row:row + 1], alone)
        alone_numerators[row, column] = alone[0, 0]
        single /= CAP
        host_kernels.tanh_inplace(single)
        alone_tanhs[row, column] = single[0, 0]
    np.testing.assert_array_equal(alone_numerators, numerators)
    np.testing.assert_array_equal(alone_tanhs, tanhs)


@pytest.mark.parametrize("temp", [0.0, 1.0])
def test_the_analysis_with_the_kernels_agrees_with_numpys_passes(monkeypatch, temp):
    logits = mx.array(_logits((8, 4096), seed=3, scale=8.0))
    uniforms = np.random.default_rng(4).random(8).astype(np.float32)
    options = dict(softcap=30.0, temperature=0.9, temp=temp, uniforms=uniforms, confidence_from="processed",
                   probabilities=True)
    with_kernels = fused.analyse(logits, **options)
    monkeypatch.setattr(host_kernels, "numba", None)   # an install without Numba (the cuda extra)
    assert not host_kernels.available()
    plain = fused.analyse(logits, **options)
    np.testing.assert_array_equal(with_kernels.argmax, plain.argmax)
    np.testing.assert_array_equal(with_kernels.proposal, plain.proposal)
    np.testing.assert_allclose(with_kernels.entropy, plain.entropy, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(with_kernels.probabilities, plain.probabilities, rtol=2e-5, atol=1e-9)
    np.testing.assert_allclose(with_kernels.probability, plain.probability, rtol=2e-5)


def test_a_model_load_on_the_cpu_compiles_the_kernels_first(monkeypatch):
    calls = []
    monkeypatch.setattr(host_kernels, "warm_up", lambda: calls.append("warm_up"))
    engine.load(CHECKPOINTS / "dg_text")
    assert calls == ["warm_up"]


def test_warm_up_compiles_every_kernel_the_engine_calls():
    host_kernels.warm_up()
    for kernel in (host_kernels._exp_self, host_kernels._tanh_self, host_kernels._geglu_flat,
                   host_kernels._swiglu_flat, host_kernels.exp_shifted, host_kernels._softcapped_flat):
        assert kernel.signatures, kernel


@pytest.mark.parametrize("name", ["exp", "tanh"])
def test_the_in_place_helpers_use_the_kernel_or_numpy_and_always_write_the_array(monkeypatch, name):
    # A strided view must be written where it lies (a kernel handed its reshape(-1), a copy, would lose the
    # result without a word): it takes NumPy's road; a C-contiguous array takes the one-array kernel.
    inplace, kernel, reference = {"exp": (host_kernels.exp_inplace, "_exp_self", np.exp),
                                  "tanh": (host_kernels.tanh_inplace, "_tanh_self", np.tanh)}[name]
    calls = []
    compiled = getattr(host_kernels, kernel)
    monkeypatch.setattr(host_kernels, kernel, lambda flat: (calls.append(flat.shape), compiled(flat)))
    x = _logits((3, 64), seed=5, scale=3.0)
    contiguous = x.copy()
    inplace(contiguous)
    assert calls == [(192,)]
    np.testing.assert_allclose(contiguous, reference(x), rtol=3e-7, atol=1e-7)
    wide = np.zeros((3, 128), np.float32)
    wide[:, ::2] = x
    inplace(wide[:, ::2])                                          # a strided view: NumPy's, in that view
    assert calls == [(192,)]
    np.testing.assert_allclose(wide[:, ::2], reference(x), rtol=3e-7, atol=1e-7)
    assert not wide[:, 1::2].any()
    monkeypatch.setattr(host_kernels, "numba", None)
    plain = x.copy()
    inplace(plain)
    assert calls == [(192,)]
    np.testing.assert_array_equal(plain, reference(x))            # without Numba: NumPy's own bits


def test_every_kernel_loop_is_vectorised_in_place_and_fused_alike():
    # The bug this guards: the network's in-place gates and softmax once called a two-array kernel with x as its
    # own out, and LLVM's run-time overlap check sent it to the scalar loop: 5.5 / 13 ns per element, slower
    # than NumPy's. The in-place kernels take one array, so there is no overlap to check for.
    # Numba cannot show cached code, so each kernel is compiled again here, uncached, with the same options.
    vector = np.zeros(64, np.float32)
    arguments = {"_exp_self": (vector,), "_tanh_self": (vector,), "_geglu_flat": (vector, vector, vector.copy()),
                 "_swiglu_flat": (vector, vector, vector.copy()),
                 "_softcapped_flat": (vector, np.float32(1.0), np.float32(1.0), vector.copy())}
    for name, args in arguments.items():
        kernel = numba.njit(error_model="numpy", nogil=True)(getattr(host_kernels, name).py_func)
        kernel(*args)
        (ir,) = kernel.inspect_llvm().values()
        assert " x float>" in ir, name


@pytest.mark.parametrize("name", ["geglu", "swiglu"])
def test_the_fused_gates_give_the_numpy_passes_bits(monkeypatch, name):
    g, up = _logits((7, 301), seed=6, scale=4.0), _logits((7, 301), seed=7, scale=2.0)
    fused_gate = getattr(host_kernels, name)(g, up)
    # the NumPy passes, with the same tanh / exp kernel on their contiguous scratch (strided inputs take that road)
    wide_g, wide_up = np.repeat(g, 2, axis=1)[:, ::2], np.repeat(up, 2, axis=1)[:, ::2]
    passes = getattr(host_kernels, name)(wide_g, wide_up)
    exact = (np.tanh(np.sqrt(2 / np.pi) * (g + 0.044715 * g.astype(np.float64) ** 3)) + 1) * g * 0.5 * up \
        if name == "geglu" else g / (1 + np.exp(-g.astype(np.float64))) * up
    np.testing.assert_allclose(fused_gate, exact, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(passes, exact, rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(fused_gate, passes)   # one order of operations, each rounded as IEEE says
