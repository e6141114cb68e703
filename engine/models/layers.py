"""Building blocks shared by the model families."""

from __future__ import annotations

import math

import mlx.core as mx
import mlx.nn as nn

from . import ops


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

    On the CPU with the host path on, the whole expert block runs in `engine.cpu.experts` instead
    (`ops.routed_experts`)."""

    def __init__(self, input_dims: int, output_dims: int, num_experts: int):
        super().__init__()
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(-scale, scale, (num_experts, output_dims, input_dims))

    def __call__(self, x: mx.array, indices: mx.array, sorted_indices: bool = False) -> mx.array:
        return ops.gather_matmul(x, self.weight, indices, sorted_indices)

    def to_quantized(self, group_size: int = 64, bits: int = 4, mode: str = "affine", **_):
        return QuantizedSwitchLinear.from_switch_linear(self, group_size, bits, mode)


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
        return ops.gather_quantized_matmul(x, self["weight"], self.scales, self.get("biases"), indices,
                                           group_size=self.group_size, bits=self.bits, mode=self.mode,
                                           sorted_indices=sorted_indices)


# From this many token-expert pairs on, pairs are grouped by expert before the gather-matmuls (as mlx-lm's
# SwitchGLU does): each expert's weight is then read once for its whole run of rows. A 256-canvas step is
# always past it; a tiny decode is not, where the argsorts would cost more than they save.
SORT_FROM_PAIRS = 64


def through_experts(x: mx.array, indices: mx.array, run) -> mx.array:
    """x [..., H] and indices [..., k] -> run's output per pair, [..., k, out]: `run(rows, expert_ids,
    sorted_indices)` applies the experts' projections to rows [P, 1, 1, H] (or broadcast [..., 1, 1, H]), sorted by
    expert first when there are SORT_FROM_PAIRS pairs or more and put back in token order after."""
    x = mx.expand_dims(x, (-2, -3))
    if indices.size < SORT_FROM_PAIRS:
        return run(x, indices, False).squeeze(-2)
    rows, expert_ids, inverse = gather_sort(x, indices)
    return scatter_unsort(run(rows, expert_ids, True), inverse, indices.shape).squeeze(-2)


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
