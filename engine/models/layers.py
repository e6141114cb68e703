"""Building blocks shared by the model families."""

from __future__ import annotations

import math

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from .. import _blas
from . import host_ops


on_cpu = host_ops.on_cpu


def rms_norm_noscale(x: mx.array, eps: float) -> mx.array:
    """RMSNorm without a weight, computed in float32 and cast back."""
    xf = x.astype(mx.float32)
    return (xf * mx.rsqrt(mx.mean(xf * xf, axis=-1, keepdims=True) + eps)).astype(x.dtype)


class RMSNorm(nn.Module):
    """RMSNorm whose weight multiplies directly (no `1 + w` offset)."""

    def __init__(self, dims: int, eps: float = 1e-6):
        super().__init__()
        self.weight = mx.ones((dims,))
        self.eps = eps

    def __call__(self, x: mx.array) -> mx.array:
        return mx.fast.rms_norm(x, self.weight, self.eps)


class SwitchLinear(nn.Module):
    """Stacked expert weights [experts, out, in], applied to the experts chosen per token with gather_mm.

    On the CPU backend MLX's gather_mm accepts float32 only, so inputs are upcast there (the loader
    keeps float weights in float32 on CPU)."""

    def __init__(self, input_dims: int, output_dims: int, num_experts: int):
        super().__init__()
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(-scale, scale, (num_experts, output_dims, input_dims))

    def __call__(self, x: mx.array, indices: mx.array, sorted_indices: bool = False) -> mx.array:
        weight = self.weight
        if on_cpu() and (x.dtype != mx.float32 or weight.dtype != mx.float32):
            x, weight = x.astype(mx.float32), weight.astype(mx.float32)
        # (On the CPU with host ops on, the whole expert block runs in models/host_experts.py instead.)
        if sorted_indices and on_cpu() and x.shape[:-1] == (*indices.shape, 1) and _blas.openblas_mapped():
            return per_expert_matmul(x, weight, indices)
        return mx.gather_mm(x, weight.swapaxes(-1, -2), rhs_indices=indices, sorted_indices=sorted_indices)

    def to_quantized(self, group_size: int = 64, bits: int = 4, mode: str = "affine", **_):
        return QuantizedSwitchLinear.from_switch_linear(self, group_size, bits, mode)


def per_expert_matmul(x: mx.array, weight: mx.array, indices: mx.array) -> mx.array:
    """gather_mm for rows already sorted by expert, as one dense matmul per expert.

    MLX's CPU gather_mm does not reach BLAS efficiently; with OpenBLAS loaded, a BLAS matmul per expert's
    contiguous run of rows is ~4x faster (measured: 1024 rows, 32 experts, 512x512: 34 ms vs 145 ms). The
    run lengths need one host sync per call, which the CPU can afford."""
    counts = np.bincount(np.array(indices), minlength=weight.shape[0])
    ends = np.cumsum(counts)
    rows = x.reshape(-1, x.shape[-1])
    pieces = [rows[end - count:end] @ weight[expert].T
              for expert, (count, end) in enumerate(zip(counts, ends)) if count]
    return mx.concatenate(pieces, axis=0).reshape(*x.shape[:-1], weight.shape[1])


class QuantizedSwitchLinear(nn.Module):
    def __init__(self, input_dims: int, output_dims: int, num_experts: int, group_size: int = 64,
                 bits: int = 4, mode: str = "affine"):
        super().__init__()
        self.group_size, self.bits, self.mode = group_size, bits, mode
        self.weight, self.scales, *rest = mx.quantize(
            mx.zeros((num_experts, output_dims, input_dims)), group_size=group_size, bits=bits, mode=mode
        )
        if rest:
            self.biases = rest[0]

    @classmethod
    def from_switch_linear(cls, layer: SwitchLinear, group_size: int, bits: int, mode: str):
        num_experts, output_dims, input_dims = layer.weight.shape
        out = cls(input_dims, output_dims, num_experts, group_size, bits, mode)
        out.weight, out.scales, *rest = mx.quantize(layer.weight, group_size=group_size, bits=bits, mode=mode)
        if rest:
            out.biases = rest[0]
        return out

    def __call__(self, x: mx.array, indices: mx.array, sorted_indices: bool = False) -> mx.array:
        scales, biases = self.scales, self.get("biases")
        if on_cpu() and x.dtype != mx.float32:
            x = x.astype(mx.float32)
        return mx.gather_qmm(
            x, self["weight"], scales, biases, rhs_indices=indices, transpose=True,
            group_size=self.group_size, bits=self.bits, mode=self.mode, sorted_indices=sorted_indices,
        )


def gather_sort(x: mx.array, indices: mx.array):
    """Sort token-expert pairs by expert so gather_mm reads each expert's weight once (worth it for many tokens)."""
    *_, m = indices.shape
    indices = indices.flatten()
    order = mx.stop_gradient(mx.argsort(indices))
    inv_order = mx.argsort(order)
    return x.flatten(0, -3)[order // m], indices[order], inv_order


def scatter_unsort(x: mx.array, inv_order: mx.array, shape=None):
    x = x[inv_order]
    if shape is not None:
        x = mx.unflatten(x, 0, shape)
    return x
