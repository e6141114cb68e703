"""Pieces both PyTorch demo networks share, each written to match the MLX op the engine uses.

The engine (engine/models/*.py) is the definition of the maths; these functions reproduce the semantics of
`mx.fast.rms_norm`, `mx.fast.rope(traditional=False)` and `mx.fast.scaled_dot_product_attention` in float32,
so that a checkpoint trained here behaves identically when the engine runs it (tests/test_demo_parity.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def upcast(x: torch.Tensor) -> torch.Tensor:
    """float32 where the engine computes in float32 (float64 stays, for reference runs of model.double())."""
    return x if x.dtype == torch.float64 else x.float()


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """x * rsqrt(mean(x^2) + eps) [* weight], in float32 (`mx.fast.rms_norm`; the weight multiplies
    directly, no `1 + w` offset, in both families)."""
    xf = upcast(x)
    out = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return out if weight is None else out * weight


class RMSNorm(nn.Module):
    """Owns `<name>.weight` like the checkpoints; initialised to ones as the engine's RMSNorm is."""

    def __init__(self, dims: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dims))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    # Same formula as engine.models.ops.geglu's gate (HF "gelu_pytorch_tanh").
    return F.gelu(x, approximate="tanh")


def routed_experts(x: torch.Tensor, indices: torch.Tensor, weights: torch.Tensor, gate_up: torch.Tensor,
                   down: torch.Tensor, activation) -> torch.Tensor:
    """sum_k weights[:, k] * expert_{indices[:, k]}(x) for x [N, H], indices / weights [N, k], gate_up [E, 2I, H]
    (gate rows first), down [E, H, I].

    Batched: every expert runs on every token and a dense [N, E] routing matrix (zero off the chosen experts)
    mixes the outputs. A per-expert loop over `torch.where(indices == e)` has data-dependent shapes, so each
    expert waits on a host sync (a GPU stalls at every one); this costs E/k times the routed FLOPs instead,
    which for the demos' 4 experts top-2 is cheap. Unchosen experts get zero weight, hence zero gradient."""
    route = torch.zeros(x.shape[0], gate_up.shape[0], dtype=weights.dtype, device=x.device)
    route = route.scatter_add(1, indices, weights)
    gate, up = torch.einsum("nh,eih->nei", x, gate_up).chunk(2, dim=-1)
    out = torch.einsum("nei,ehi->neh", activation(gate) * up, down)
    return torch.einsum("neh,ne->nh", out, route.to(out.dtype))


def linear(dims_in: int, dims_out: int) -> nn.Linear:
    return nn.Linear(dims_in, dims_out, bias=False)


def rope_inverse_frequencies(rotated_dims: int, base: float) -> torch.Tensor:
    """[rotated_dims/2] angle per position of each rotate-half pair: base^(-2j/rotated_dims), the
    frequencies `mx.fast.rope(x, rotated_dims, base=base)` uses."""
    exponents = torch.arange(0, rotated_dims, 2, dtype=torch.float64) / rotated_dims
    return (base ** -exponents).float()


def apply_rope(x: torch.Tensor, positions: torch.Tensor, inverse_frequencies: torch.Tensor) -> torch.Tensor:
    """Rotate-half RoPE on the first 2*len(inverse_frequencies) channels of x [B, heads, T, D]; the rest
    pass through (`mx.fast.rope(..., traditional=False)`: channel j pairs with j + dims/2).

    positions [B, T] (or [T]) are absolute, per row, so right-padded batches with rows of different
    prompt lengths rotate each token by its own position. A zero frequency leaves its pair unrotated
    (the engine's "proportional" RoPE passes inf wavelengths to mx.fast.rope for the same effect)."""
    half = inverse_frequencies.shape[0]
    if positions.dim() == 1:
        positions = positions[None]
    angles = positions.to(inverse_frequencies.dtype)[:, None, :, None] * inverse_frequencies.to(x.device)
    cos, sin = torch.cos(angles), torch.sin(angles)
    x1, x2, rest = x[..., :half], x[..., half:2 * half], x[..., 2 * half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1)


def attend(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor | None,
           scale: float) -> torch.Tensor:
    """SDPA with grouped KV heads (query head j reads KV head j // (heads/kv_heads), as MLX does) and a
    boolean mask [B|1, 1, T, S] where True means "may attend". Every query row must see >= 1 key."""
    return F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask, scale=scale,
                                          enable_gqa=queries.shape[1] != keys.shape[1])


def concat_prefix(prefix: tuple[torch.Tensor, torch.Tensor] | None, keys: torch.Tensor,
                  values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """[prefix keys ; own keys] along the sequence axis (the engine's LayerKV.extended)."""
    if prefix is None:
        return keys, values
    return torch.cat([prefix[0], keys], dim=2), torch.cat([prefix[1], values], dim=2)


def as_positions(positions: torch.Tensor | None, ids: torch.Tensor) -> torch.Tensor:
    """Default positions 0..T-1 for every row (the right-padding layout both families train with)."""
    if positions is None:
        return torch.arange(ids.shape[1], device=ids.device).expand(ids.shape[0], -1)
    return positions if positions.dim() == 2 else positions[None].expand(ids.shape[0], -1)
