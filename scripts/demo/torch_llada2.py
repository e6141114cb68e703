"""LLaDA-2 MoE in PyTorch, for training demo checkpoints the engine then runs.

Computes exactly what engine/models/llada2_moe.py computes (reference: shared/reference/llada2.md §4),
checked by tests/test_demo_parity.py; `state_dict()` is the Hugging Face layout of
tests/fixtures/checkpoints/llada2 (per-expert `mlp.experts.{e}.*` tensors, untied `lm_head`).

Training layout (BD3-LM style, `training_masks`): every row is packed from position 0 (right padding;
blocks of `block_length` are aligned to absolute position 0, which left padding would break) and holds
`lengths[b]` real tokens: prompt then answer. The clean copy runs block-causally (a position sees its own
block and every earlier block); the noisy copy — the same row with some answer positions replaced by the
mask token, prompt tokens kept — sees the clean keys of earlier blocks and the noisy keys of its own block.
A prompt that ends inside a block therefore sits, clean, in the first denoised block, as the engine's
generate puts it there (engine/generation/llada2.py `_prefill` / `_denoise_block`). Keys at positions
>= lengths[b] are hidden; padding rows see themselves only and their logits mean nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from .torch_common import (RMSNorm, apply_rope, as_positions, attend, concat_prefix, linear,
                           rope_inverse_frequencies, routed_experts, upcast)

FAMILY = "llada2_moe"


@dataclass
class Sizes:
    vocab: int
    hidden: int
    intermediate: int
    moe_intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    rotary_dim: int
    rope_theta: float
    eps: float
    experts: int
    shared_experts: int
    top_k: int
    n_group: int
    topk_group: int
    routed_scaling: float
    first_dense: int
    tied: bool

    @classmethod
    def from_config(cls, c: dict) -> "Sizes":
        # The same fall-backs as the engine's ModelConfig (LLaDA2.0-mini values).
        rope = c.get("rope_parameters") or {}
        hidden, heads = int(c["hidden_size"]), int(c["num_attention_heads"])
        head_dim = int(c.get("head_dim") or hidden // heads)
        factor = float(c.get("partial_rotary_factor") or rope.get("partial_rotary_factor") or 0.5)
        if c.get("score_function", "sigmoid") != "sigmoid":
            raise ValueError("only the sigmoid router is supported")
        return cls(
            vocab=int(c["vocab_size"]), hidden=hidden, intermediate=int(c["intermediate_size"]),
            moe_intermediate=int(c.get("moe_intermediate_size", 512)), layers=int(c["num_hidden_layers"]),
            heads=heads, kv_heads=int(c.get("num_key_value_heads", 4)), head_dim=head_dim,
            rotary_dim=int(c.get("rotary_dim") or int(head_dim * factor)),
            rope_theta=float(c.get("rope_theta") or rope.get("rope_theta") or 600000.0),
            eps=float(c.get("rms_norm_eps", 1e-6)), experts=int(c.get("num_experts") or 0),
            shared_experts=int(c.get("num_shared_experts", 1)), top_k=int(c.get("num_experts_per_tok", 8)),
            n_group=int(c.get("n_group", 8)), topk_group=int(c.get("topk_group", 4)),
            routed_scaling=float(c.get("routed_scaling_factor", 2.5)),
            first_dense=int(c.get("first_k_dense_replace", 1)), tied=bool(c.get("tie_word_embeddings", False)),
        )


class Attention(nn.Module):
    def __init__(self, s: Sizes):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = s.heads, s.kv_heads, s.head_dim
        self.scale = s.head_dim ** -0.5
        self.query_key_value = linear(s.hidden, (s.heads + 2 * s.kv_heads) * s.head_dim)
        self.dense = linear(s.heads * s.head_dim, s.hidden)
        self.query_layernorm = RMSNorm(s.head_dim, s.eps)
        self.key_layernorm = RMSNorm(s.head_dim, s.eps)
        # Rotate-half on the first rotary_dim channels with base^(-2j/rotary_dim); the rest pass through.
        self.register_buffer("frequencies", rope_inverse_frequencies(s.rotary_dim, s.rope_theta), persistent=False)

    def project(self, x, positions):
        batch, length, _ = x.shape
        qkv = self.query_key_value(x).view(batch, length, self.heads + 2 * self.kv_heads, self.head_dim)
        q, k, v = qkv.split([self.heads, self.kv_heads, self.kv_heads], dim=2)
        q, k = self.query_layernorm(q), self.key_layernorm(k)   # qk-norm before RoPE; V unnormalised
        q, k, v = (a.transpose(1, 2) for a in (q, k, v))
        return apply_rope(q, positions, self.frequencies), apply_rope(k, positions, self.frequencies), v

    def forward(self, x, positions, mask, prefix):
        q, k, v = self.project(x, positions)
        keys, values = concat_prefix(prefix, k, v)
        out = attend(q, keys, values, mask, self.scale)
        return self.dense(out.transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)), (k, v)


class MLP(nn.Module):
    """SwiGLU: the dense FFN of the first layers, each routed expert, and the shared expert."""

    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.gate_proj, self.up_proj = linear(hidden, intermediate), linear(hidden, intermediate)
        self.down_proj = linear(intermediate, hidden)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Gate(nn.Module):
    """Sigmoid router with group-limited top-k, in float32 (the engine's `Gate`).

    `expert_bias` only steers the choice; it gets no gradient (LLaDA trains it with the auxiliary-loss-
    free balancing update, outside the optimizer)."""

    def __init__(self, s: Sizes):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(s.experts, s.hidden).normal_(0.0, 0.02))
        self.expert_bias = nn.Parameter(torch.zeros(s.experts), requires_grad=False)
        self.top_k, self.n_group, self.topk_group, self.scaling = s.top_k, s.n_group, s.topk_group, s.routed_scaling

    def forward(self, x):
        scores = torch.sigmoid(upcast(x) @ upcast(self.weight).T)
        choice = (scores + upcast(self.expert_bias)).detach()
        if self.n_group > 1 and self.topk_group < self.n_group:
            grouped = choice.view(*choice.shape[:-1], self.n_group, -1)
            # A group scores the sum of its two best experts; the worst n_group - topk_group groups drop out
            # (-inf, not 0: with the bias, kept experts can score below zero).
            group_scores = grouped.topk(min(2, grouped.shape[-1]), dim=-1).values.sum(-1)
            dropped = group_scores.topk(self.n_group - self.topk_group, dim=-1, largest=False).indices
            grouped = grouped.scatter(-2, dropped[..., None].expand(*dropped.shape, grouped.shape[-1]), float("-inf"))
            choice = grouped.reshape(choice.shape)
        indices = choice.topk(self.top_k, dim=-1).indices
        weights = scores.gather(-1, indices)
        if self.top_k > 1:
            weights = weights / (weights.sum(-1, keepdim=True) + 1e-20)
        return indices, weights * self.scaling


class SparseMoeBlock(nn.Module):
    def __init__(self, s: Sizes):
        super().__init__()
        self.gate = Gate(s)
        self.experts = nn.ModuleList(MLP(s.hidden, s.moe_intermediate) for _ in range(s.experts))
        self.shared_experts = MLP(s.hidden, s.moe_intermediate * s.shared_experts) if s.shared_experts else None

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        indices, weights = self.gate(flat)
        # The checkpoint's layout keeps one module per expert; stacked here for the batched dispatch.
        gate_up = torch.stack([torch.cat([e.gate_proj.weight, e.up_proj.weight]) for e in self.experts])
        down = torch.stack([e.down_proj.weight for e in self.experts])
        out = routed_experts(flat, indices, weights, gate_up, down, F.silu).view(x.shape)
        return out if self.shared_experts is None else out + self.shared_experts(x)


class DecoderLayer(nn.Module):
    def __init__(self, s: Sizes, index: int):
        super().__init__()
        self.attention = Attention(s)
        dense = not s.experts or index < s.first_dense
        self.mlp = MLP(s.hidden, s.intermediate) if dense else SparseMoeBlock(s)
        self.input_layernorm = RMSNorm(s.hidden, s.eps)
        self.post_attention_layernorm = RMSNorm(s.hidden, s.eps)

    def forward(self, x, positions, mask, prefix):
        attended, kv = self.attention(self.input_layernorm(x), positions, mask, prefix)
        h = x + attended
        return h + self.mlp(self.post_attention_layernorm(h)), kv


class Backbone(nn.Module):
    def __init__(self, s: Sizes):
        super().__init__()
        self.word_embeddings = nn.Embedding(s.vocab, s.hidden)   # no sqrt(H) scale in this family
        self.layers = nn.ModuleList(DecoderLayer(s, i) for i in range(s.layers))
        self.norm = RMSNorm(s.hidden, s.eps)


class LLaDA2Moe(nn.Module):
    """`LLaDA2Moe(config)` with config = a config.json dict (export.config_for builds one)."""

    def __init__(self, config: dict):
        super().__init__()
        self.config = config
        self.sizes = Sizes.from_config(config)
        self.model = Backbone(self.sizes)
        self.lm_head = None if self.sizes.tied else linear(self.sizes.hidden, self.sizes.vocab)

    def encode(self, ids, positions, mask):
        """Keys/values of every layer [B, kv_heads, T, D] (keys rotated) for the clean copy; the last layer
        stops at its projections (its output is never needed)."""
        positions = as_positions(positions, ids)
        h = self.model.word_embeddings(ids)
        out = []
        for i, layer in enumerate(self.model.layers):
            if i == len(self.model.layers) - 1:
                _, k, v = layer.attention.project(layer.input_layernorm(h), positions)
                out.append((k, v))
                break
            h, kv = layer(h, positions, mask, None)
            out.append(kv)
        return out

    def forward(self, ids, positions, mask, prefix_kv=None):
        """float32 logits [B, T, V]; with prefix_kv the keys are [prefix ; own] and mask is bool
        [B|1, 1, T, T_prefix + T], else [B|1, 1, T, T] (None = fully bidirectional, as the engine's
        block forward)."""
        positions = as_positions(positions, ids)
        h = self.model.word_embeddings(ids)
        for i, layer in enumerate(self.model.layers):
            h, _ = layer(h, positions, mask, None if prefix_kv is None else prefix_kv[i])
        h = self.model.norm(h)
        head = self.model.word_embeddings.weight if self.lm_head is None else self.lm_head.weight
        return upcast(h @ head.T)

    def training_logits(self, clean_ids, noisy_ids, masks: "Masks"):
        """BD3-LM forward: clean copy block-causally, noisy copy against it -> noisy logits [B, T, V]."""
        prefix = self.encode(clean_ids, masks.positions, masks.clean)
        return self(noisy_ids, masks.positions, masks.noisy, prefix)


@dataclass
class Masks:
    positions: torch.Tensor   # [B, T] long, 0..T-1
    valid: torch.Tensor       # [B, T] bool, position < lengths[b]
    clean: torch.Tensor       # bool [B, 1, T, T]: block(k) <= block(q), k real
    noisy: torch.Tensor       # bool [B, 1, T, 2T]: [clean keys of blocks < block(q) ; noisy keys of block(q)]


def training_masks(lengths, block_length: int, total_length: int | None = None) -> Masks:
    """Block-parallel masks for right-padded rows of `lengths[b]` real tokens (module docstring)."""
    lengths = torch.as_tensor(lengths, dtype=torch.long)[:, None]
    length = int(lengths.max()) if total_length is None else total_length
    i = torch.arange(length)
    blocks = torch.div(i, block_length, rounding_mode="floor")
    valid = i[None] < lengths                                               # [B, T]
    real_key = valid[:, None, :]                                            # [B, 1, T] over keys
    self_only = (i[:, None] == i[None, :])[None]                            # keeps padding rows finite
    clean = ((blocks[None, :] <= blocks[:, None])[None] & real_key) | self_only
    earlier = (blocks[None, :] < blocks[:, None])[None] & real_key
    same = ((blocks[None, :] == blocks[:, None])[None] & real_key) | self_only
    return Masks(i.expand(len(lengths), -1), valid, clean[:, None], torch.cat([earlier, same], -1)[:, None])
