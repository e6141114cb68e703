"""One pass over a denoising step's logits gives what every consumer needs: the argmax, the entropy, the
proposals (sampled by inverse transform from uniforms the randomness object drew), the proposals'
probabilities and the softmax itself (the next step's self-conditioning input).

The vocabulary-wide work is one softcap (DiffusionGemma), one exp, one cumulative sum (only when sampling)
and a few multiply-adds, whatever asks for the results. Two implementations of the same maths:

* host (NumPy, `engine.cpu.sampler`), used on the host path (MLX on the CPU): MLX's CPU backend runs
  element-wise transcendental ops single-threaded and unvectorised. The logits are read once.
* device (compiled MLX, below), used on Metal / CUDA and on a CPU with the host path off, where the logits
  stay on the device and only the per-position results come back, in the same single evaluation.

Exact identities, not approximations: H = log Z - sum(p z) is the entropy of softmax(z); inverse-transform
sampling draws exactly from the categorical distribution. The tests run both (`DIFFUSION_CHAT_HOST_OPS=0`
selects the device half on a CPU).
"""

from __future__ import annotations

from functools import partial

import mlx.core as mx
import numpy as np

from ..cpu import device, sampler as host_sampler
from .analysis import Analysis
from .sampling import top_k_filter, top_p_filter

__all__ = ["Analysis", "analyse"]


def analyse(logits: mx.array, *, softcap: float | None = None, temperature: float = 1.0, temp: float = 0.0,
            uniforms: np.ndarray | None = None, proposal: np.ndarray | None = None, top_k: int | None = None,
            top_p: float | None = None, confidence_from: str | None = None, probabilities: bool = False,
            check_finite: bool = False, probabilities_into: mx.array | None = None) -> Analysis:
    """`logits` [L, V] float32 (before the softcap when `softcap` is given). processed = softcap(logits) /
    temperature. Proposals: `proposal` if recorded, else the argmax when `temp` is 0, else drawn with
    `uniforms` from softmax(top_p(top_k(processed / temp))). `confidence_from`: "processed" gives each
    proposal's probability under softmax(processed) (DiffusionGemma's confidence), "proposal" under the
    distribution it was drawn from (LLaDA-2's), None none.

    `probabilities_into`: an MLX float32 [L, V] array the host may overwrite with the softmax instead of
    allocating one, for a caller that knows no graph still needs its contents (the step loop passes the
    previous step's softmax: these logits' evaluation, the analysis's first act, was its last use)."""
    options = dict(softcap=softcap, temperature=float(temperature), temp=float(temp), top_k=top_k or None,
                   top_p=top_p if top_p is not None and top_p < 1.0 else None, confidence_from=confidence_from,
                   probabilities=probabilities, check_finite=check_finite)
    sampling = proposal is None and temp != 0
    if sampling and uniforms is None:
        raise ValueError("sampling proposals needs uniforms (or recorded proposals)")
    if device.host_path():
        return host_sampler.analyse(logits, proposal, uniforms if sampling else None,
                                    probabilities_into=probabilities_into, **options)
    return _device(logits, proposal, uniforms if sampling else None, **options)


# ---- device ----------------------------------------------------------------------------------------------------


def _device(logits: mx.array, proposal, uniforms, *, softcap, temperature, temp, top_k, top_p, confidence_from,
            probabilities, check_finite) -> Analysis:
    z, argmax, p, entropy = _device_processed(logits, softcap, temperature)
    q = p
    if temp != 0 and (uniforms is not None or confidence_from == "proposal") and (temp != 1.0 or top_k or top_p):
        q = mx.softmax(top_p_filter(top_k_filter(z / temp, top_k), top_p), axis=-1, precise=True)
    if proposal is not None:
        drawn = mx.array(np.asarray(proposal, np.int32))
    else:
        drawn = argmax if uniforms is None else _device_inverse_transform(q, mx.array(np.asarray(uniforms, np.float32)))
    rows = [argmax, entropy, drawn]
    if confidence_from is not None:
        rows.append(mx.take_along_axis(q if confidence_from == "proposal" else p, drawn[:, None], axis=-1)[:, 0])
    if check_finite:
        rows.append(mx.broadcast_to(mx.all(mx.isfinite(logits)).astype(mx.float32), argmax.shape))
    packed = _pack(rows)
    if probabilities:
        # scheduled with the per-position rows (the same pass over the logits), waited on by the next step
        mx.async_eval(packed, p)
    # The step's one host synchronisation: every per-position result comes back in one [rows, L] read.
    host = np.array(packed)
    probability = host[3] if confidence_from is not None else None
    finite = bool(host[-1, 0]) if check_finite else True
    return Analysis(host[0].view(np.int32), host[1], host[2].view(np.int32), probability,
                    p if probabilities else None, finite)


def _pack(rows: list[mx.array]) -> mx.array:
    """float32 [rows, L]; the integer rows (argmax, proposal) travel bit for bit as float32 views."""
    return mx.stack([mx.view(row.astype(mx.int32), mx.float32) if row.dtype in (mx.int32, mx.uint32)
                     else row.astype(mx.float32) for row in rows])


@partial(mx.compile, shapeless=True)
def _device_core(logits: mx.array, cap: mx.array, temperature: mx.array):
    z = mx.tanh(logits / cap) * cap / temperature
    return _device_tail(z)


@partial(mx.compile, shapeless=True)
def _device_core_plain(logits: mx.array, temperature: mx.array):
    return _device_tail(logits / temperature)


def _device_tail(z: mx.array):
    argmax = mx.argmax(z, axis=-1).astype(mx.int32)
    top = mx.max(z, axis=-1, keepdims=True)
    e = mx.exp(z - top)
    total = mx.sum(e, axis=-1, keepdims=True)
    p = e / total
    entropy = (top + mx.log(total))[:, 0] - mx.sum(p * z, axis=-1)
    return z, argmax, p, entropy


def _device_processed(logits: mx.array, softcap, temperature):
    t = mx.array(temperature, dtype=mx.float32)
    if softcap:
        return _device_core(logits, mx.array(softcap, dtype=mx.float32), t)
    return _device_core_plain(logits, t)


def _device_inverse_transform(q: mx.array, uniforms: mx.array) -> mx.array:
    cumulative = mx.cumsum(q, axis=-1)
    target = uniforms * cumulative[:, -1]
    ids = mx.sum(cumulative <= target[:, None], axis=-1)
    return mx.minimum(ids, q.shape[-1] - 1).astype(mx.int32)
