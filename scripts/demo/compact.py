"""Compact training layouts: the denoising pass runs over the denoised blocks only, not the whole sequence.

The block-parallel layouts of torch_dg.py / torch_llada2.py run the decoder (DiffusionGemma) or the noisy copy
(LLaDA-2) over every position, prompt included, whose rows are then thrown away. Prompts are most of the tokens
in this curriculum (multi-turn history), so here the second pass reads only the canvases (DiffusionGemma) or
the blocks from the first one holding an answer position (LLaDA-2), packed to the left of their own rows with
their true positions. The attention each query sees is the same as in the full layouts (checked by
scripts/demo/check_compact.py against them), so the logits at every trained position are identical.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

SLIDING, FULL = "sliding_attention", "full_attention"


@dataclass
class CompactDG:
    positions: torch.Tensor        # [B, Tc] true positions of the packed canvas rows
    valid: torch.Tensor            # [B, Tc] bool: a real canvas position
    gather: torch.Tensor           # [B, Tc] index into the full row (clamped for padding)
    decoder_masks: dict            # layer type -> bool [B, 1, Tc, T + Tc]
    encoder_masks: dict            # layer type -> bool [1, 1, T, T]


def dg_layout(prompt_lengths, num_blocks, canvas: int, window: int, total_length: int, device=None) -> CompactDG:
    """`device`: where the layout is built (the trainer's; masks are large, better made there than copied)."""
    prompts = torch.as_tensor(prompt_lengths, dtype=torch.long, device=device)[:, None]
    sizes = torch.as_tensor(num_blocks, dtype=torch.long, device=device)[:, None] * canvas
    width = int(sizes.max())
    i = torch.arange(width, device=device)[None]
    valid = i < sizes
    positions = prompts + i
    gather = torch.where(valid, positions, torch.zeros_like(positions)).clamp(max=total_length - 1)
    block = torch.div(i, canvas, rounding_mode="floor")
    start = (prompts + block * canvas)[:, :, None]                         # [B, Tc, 1]
    keys = torch.arange(total_length, device=device)[None, None]                         # [1, 1, T]
    before = valid[:, :, None] & (keys < start)
    recent = before & (keys >= start - window + 1)
    own = valid[:, :, None] & valid[:, None, :] & (block[:, :, None] == block[:, None, :])
    own = own | (~valid[:, :, None] & torch.eye(width, dtype=torch.bool, device=device)[None])   # padding rows: themselves
    t = torch.arange(total_length, device=device)
    causal = t[None, :] <= t[:, None]
    encoder = {FULL: causal[None, None], SLIDING: (causal & (t[:, None] - t[None, :] < window))[None, None]}
    decoder = {FULL: torch.cat([before, own], -1)[:, None], SLIDING: torch.cat([recent, own], -1)[:, None]}
    return CompactDG(positions, valid, gather, decoder, encoder)


@dataclass
class CompactLLaDA:
    positions: torch.Tensor        # [B, Tn]
    valid: torch.Tensor            # [B, Tn]
    gather: torch.Tensor           # [B, Tn]
    clean_mask: torch.Tensor       # bool [B, 1, T, T]: block-causal over the real tokens
    noisy_mask: torch.Tensor       # bool [B, 1, Tn, T + Tn]


def llada_layout(prompt_lengths, lengths, block: int, total_length: int, device=None) -> CompactLLaDA:
    lengths_ = torch.as_tensor(lengths, dtype=torch.long, device=device)[:, None]
    first = torch.div(torch.as_tensor(prompt_lengths, dtype=torch.long, device=device)[:, None], block, rounding_mode="floor") * block
    sizes = lengths_ - first
    width = int(sizes.max())
    i = torch.arange(width, device=device)[None]
    valid = i < sizes
    positions = first + i
    gather = torch.where(valid, positions, torch.zeros_like(positions)).clamp(max=total_length - 1)
    t = torch.arange(total_length, device=device)
    blocks = torch.div(t, block, rounding_mode="floor")
    real = (t[None] < lengths_)[:, None, :]                                # [B, 1, T] real keys
    eye = torch.eye(total_length, dtype=torch.bool, device=device)[None]
    clean = ((blocks[None, :] <= blocks[:, None])[None] & real) | eye
    query_block = torch.div(positions, block, rounding_mode="floor")      # [B, Tn]
    earlier = valid[:, :, None] & (blocks[None, None, :] < query_block[:, :, None]) & real
    same = valid[:, :, None] & valid[:, None, :] & (query_block[:, :, None] == query_block[:, None, :])
    same = same | (~valid[:, :, None] & torch.eye(width, dtype=torch.bool, device=device)[None])
    return CompactLLaDA(positions, valid, gather, clean[:, None], torch.cat([earlier, same], -1)[:, None])


def take(rows: torch.Tensor, gather: torch.Tensor) -> torch.Tensor:
    """rows [B, T] (or [B, T, ...]) at the compact positions."""
    return torch.gather(rows, 1, gather) if rows.ndim == 2 else \
        torch.gather(rows, 1, gather[..., None].expand(*gather.shape, rows.shape[-1]))
