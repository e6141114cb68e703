"""DiffusionGemma (text only) in PyTorch, for training demo checkpoints the engine then runs.

Computes exactly what engine/models/diffusion_gemma.py computes (reference: shared/reference/
diffusiongemma.md §3-5), checked by tests/test_demo_parity.py; `state_dict()` is the Hugging Face layout
of tests/fixtures/checkpoints/dg_text, so `export.export_checkpoint` writes it unchanged.

Training layout (`training_layout`): every batch row is packed from position 0 — prompt (P_b tokens),
then `num_blocks_b` canvases of `canvas_length`, then right padding up to T. Positions are 0..T-1 in
every row. The encoder runs causally over the clean row; the decoder runs over the noisy row, where each
canvas position sees the encoder keys before its canvas (the last window-1 of them on sliding layers, as
the engine's decoder reads `sliding_key_start`) and the decoder keys of its own canvas only. Prompt and
padding rows of the decoder see only themselves; their logits mean nothing (leave them out of the loss).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from .torch_common import (RMSNorm, apply_rope, as_positions, attend, concat_prefix, gelu_tanh, linear,
                           rms_norm, rope_inverse_frequencies, routed_experts, upcast)

SLIDING = "sliding_attention"
FULL = "full_attention"
FAMILY = "diffusion_gemma"
# The engine's fall-backs when text_config leaves RoPE out (engine/models/diffusion_gemma.py _DEFAULT_ROPE).
_DEFAULT_ROPE = {
    SLIDING: {"rope_type": "default", "rope_theta": 10000.0},
    FULL: {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
}


@dataclass
class Sizes:
    """The text_config values the network needs, with the engine's defaults."""

    vocab: int
    hidden: int
    intermediate: int
    moe_intermediate: int
    layer_types: list[str]
    heads: int
    kv_heads: int
    head_dim: int
    global_kv_heads: int
    global_head_dim: int
    experts: int
    top_k: int
    rope: dict
    eps: float
    window: int
    softcap: float | None

    @classmethod
    def from_config(cls, config: dict) -> "Sizes":
        text = config.get("text_config", config)
        rope = text.get("rope_parameters") or {}
        return cls(
            vocab=int(text["vocab_size"]), hidden=int(text["hidden_size"]),
            intermediate=int(text["intermediate_size"]), moe_intermediate=int(text["moe_intermediate_size"]),
            layer_types=list(text["layer_types"]), heads=int(text["num_attention_heads"]),
            kv_heads=int(text["num_key_value_heads"]), head_dim=int(text["head_dim"]),
            global_kv_heads=int(text.get("num_global_key_value_heads") or text["num_key_value_heads"]),
            global_head_dim=int(text.get("global_head_dim") or text["head_dim"]),
            experts=int(text["num_experts"]), top_k=int(text["top_k_experts"]),
            rope={kind: dict(rope.get(kind) or _DEFAULT_ROPE[kind]) for kind in (SLIDING, FULL)},
            eps=float(text.get("rms_norm_eps", 1e-6)), window=int(text.get("sliding_window") or 1024),
            softcap=float(text["final_logit_softcapping"]) if text.get("final_logit_softcapping", 30.0) else None,
        )


def rope_frequencies(head_dim: int, params: dict) -> torch.Tensor:
    """[head_dim/2] angle per position of each pair, as the engine's `Rotary`: "default" rotates every
    pair with base^(-2j/D); "proportional" rotates only the first int(factor*D/2) pairs, still with
    exponents over the full D, and leaves the rest (frequency 0)."""
    base = float(params.get("rope_theta", 10000.0))
    frequencies = rope_inverse_frequencies(head_dim, base)
    if params.get("rope_type", "default") == "proportional":
        rotated = int(float(params.get("partial_rotary_factor", 1.0)) * head_dim / 2)
        frequencies[rotated:] = 0.0
    elif params.get("rope_type", "default") != "default" or float(params.get("partial_rotary_factor", 1.0)) != 1.0:
        raise ValueError(f"unsupported RoPE settings: {params}")
    return frequencies


class Attention(nn.Module):
    def __init__(self, s: Sizes, layer_type: str):
        super().__init__()
        full = layer_type == FULL
        self.head_dim = s.global_head_dim if full else s.head_dim
        self.heads, self.kv_heads = s.heads, s.global_kv_heads if full else s.kv_heads
        self.eps = s.eps
        self.q_proj = linear(s.hidden, self.heads * self.head_dim)
        self.k_proj = linear(s.hidden, self.kv_heads * self.head_dim)
        # Full layers have no v_proj: their values come from the key projection ("k_eq_v").
        self.v_proj = None if full else linear(s.hidden, self.kv_heads * self.head_dim)
        self.o_proj = linear(self.heads * self.head_dim, s.hidden)
        self.q_norm = RMSNorm(self.head_dim, s.eps)
        self.k_norm = RMSNorm(self.head_dim, s.eps)
        self.register_buffer("frequencies", rope_frequencies(self.head_dim, s.rope[layer_type]), persistent=False)

    def project(self, x, positions):
        """Queries, keys, values [B, heads, T, D]: q/k RMS-normed then rotated; values RMS-normed without
        a weight and never rotated."""
        batch, length, _ = x.shape
        q = self.q_proj(x).view(batch, length, self.heads, self.head_dim)
        raw_k = self.k_proj(x).view(batch, length, self.kv_heads, self.head_dim)
        raw_v = raw_k if self.v_proj is None else self.v_proj(x).view(batch, length, self.kv_heads, self.head_dim)
        q = apply_rope(self.q_norm(q).transpose(1, 2), positions, self.frequencies)
        k = apply_rope(self.k_norm(raw_k).transpose(1, 2), positions, self.frequencies)
        v = rms_norm(raw_v, None, self.eps).transpose(1, 2)
        return q, k, v

    def forward(self, x, positions, mask, prefix):
        q, k, v = self.project(x, positions)
        keys, values = concat_prefix(prefix, k, v)
        # The q/k norms take the place of 1/sqrt(d): the attention scale is 1.
        out = attend(q, keys, values, mask, scale=1.0)
        return self.o_proj(out.transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)), (k, v)


class MLP(nn.Module):
    """GeGLU (tanh gelu): the dense "shared expert" of every layer."""

    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.gate_proj, self.up_proj = linear(hidden, intermediate), linear(hidden, intermediate)
        self.down_proj = linear(intermediate, hidden)

    def forward(self, x):
        return self.down_proj(gelu_tanh(self.gate_proj(x)) * self.up_proj(x))


class Router(nn.Module):
    def __init__(self, s: Sizes):
        super().__init__()
        self.proj = linear(s.hidden, s.experts)
        self.scale = nn.Parameter(torch.ones(s.hidden))
        self.per_expert_scale = nn.Parameter(torch.ones(s.experts))
        self.top_k, self.eps, self.input_scale = s.top_k, s.eps, s.hidden ** -0.5

    def forward(self, residual):
        """Reads the un-normalised residual. The chosen indices carry no gradient (torch.topk's indices
        never do); the gradient reaches proj/scale through the chosen scores, as in the engine."""
        scores = self.proj(rms_norm(residual, None, self.eps) * self.scale * self.input_scale)
        top, indices = torch.topk(scores, self.top_k, dim=-1)
        weights = torch.softmax(upcast(top), dim=-1) * self.per_expert_scale[indices]
        return indices, weights


class Experts(nn.Module):
    """Stacked expert weights in the HF layout (no `.weight` suffix): gate_up [E, 2I, H] (gate rows first),
    down [E, H, I]. Each expert runs on the tokens routed to it only."""

    def __init__(self, s: Sizes):
        super().__init__()
        bound_in, bound_mid = s.hidden ** -0.5, s.moe_intermediate ** -0.5
        self.gate_up_proj = nn.Parameter(torch.empty(s.experts, 2 * s.moe_intermediate, s.hidden).uniform_(-bound_in, bound_in))
        self.down_proj = nn.Parameter(torch.empty(s.experts, s.hidden, s.moe_intermediate).uniform_(-bound_mid, bound_mid))

    def forward(self, x, indices, weights):
        """x [N, H], indices/weights [N, k] -> sum_k weights * expert_k(x)."""
        return routed_experts(x, indices, weights, self.gate_up_proj, self.down_proj, gelu_tanh)


class DecoderLayer(nn.Module):
    NORMS = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
             "post_feedforward_layernorm_1", "pre_feedforward_layernorm_2", "post_feedforward_layernorm_2",
             "post_feedforward_layernorm")

    def __init__(self, s: Sizes, layer_type: str):
        super().__init__()
        self.layer_type = layer_type
        self.self_attn = Attention(s, layer_type)
        self.mlp = MLP(s.hidden, s.intermediate)
        self.router = Router(s)
        self.experts = Experts(s)
        for name in self.NORMS:
            setattr(self, name, RMSNorm(s.hidden, s.eps))
        self.layer_scalar = nn.Parameter(torch.ones(1))

    def forward(self, x, positions, mask, prefix, layer_scalar):
        attended, kv = self.self_attn(self.input_layernorm(x), positions, mask, prefix)
        h = x + self.post_attention_layernorm(attended)
        dense = self.post_feedforward_layernorm_1(self.mlp(self.pre_feedforward_layernorm(h)))
        flat = h.reshape(-1, h.shape[-1])
        # The router reads the un-normalised residual; the experts read their own pre-norm.
        indices, weights = self.router(flat)
        routed = self.experts(self.pre_feedforward_layernorm_2(flat), indices, weights).view(h.shape)
        routed = self.post_feedforward_layernorm_2(routed)
        return (h + self.post_feedforward_layernorm(dense + routed)) * layer_scalar, kv


class SelfConditioning(nn.Module):
    """rms_norm_noweight(e + down(geglu(gate(n), up(n)))), n = pre_norm(s); s = 0 adds exactly 0."""

    def __init__(self, s: Sizes):
        super().__init__()
        self.pre_norm = RMSNorm(s.hidden, s.eps)
        self.gate_proj, self.up_proj = linear(s.hidden, s.intermediate), linear(s.hidden, s.intermediate)
        self.down_proj = linear(s.intermediate, s.hidden)
        self.eps = s.eps

    def forward(self, embeddings, soft):
        if soft is not None:
            n = self.pre_norm(soft)
            embeddings = embeddings + self.down_proj(gelu_tanh(self.gate_proj(n)) * self.up_proj(n))
        return rms_norm(embeddings, None, self.eps)


class Decoder(nn.Module):
    def __init__(self, s: Sizes):
        super().__init__()
        self.embed_tokens = nn.Embedding(s.vocab, s.hidden)
        self.layers = nn.ModuleList(DecoderLayer(s, kind) for kind in s.layer_types)
        self.norm = RMSNorm(s.hidden, s.eps)
        self.self_conditioning = SelfConditioning(s)


class EncoderLayer(nn.Module):
    """The encoder shares every decoder weight except its per-layer output scale."""

    def __init__(self):
        super().__init__()
        self.layer_scalar = nn.Parameter(torch.ones(1))


class EncoderLanguageModel(nn.Module):
    def __init__(self, layers: int):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer() for _ in range(layers))


class Encoder(nn.Module):
    def __init__(self, layers: int):
        super().__init__()
        self.language_model = EncoderLanguageModel(layers)


class Backbone(nn.Module):
    def __init__(self, s: Sizes):
        super().__init__()
        self.decoder = Decoder(s)
        self.encoder = Encoder(len(s.layer_types))


class DiffusionGemma(nn.Module):
    """`DiffusionGemma(config)` with config = a config.json dict (export.config_for builds one)."""

    def __init__(self, config: dict):
        super().__init__()
        self.config = config
        self.sizes = Sizes.from_config(config)
        self.embed_scale = math.sqrt(self.sizes.hidden)
        self.model = Backbone(self.sizes)

    @property
    def layers(self):
        return self.model.decoder.layers

    def embed(self, ids):
        # The sqrt(H) scale is applied in float32 (the engine's _embed).
        return upcast(self.model.decoder.embed_tokens(ids)) * self.embed_scale

    def soft_embeddings(self, processed_logits):
        """The self-conditioning signal softmax(z) @ E * sqrt(H) from processed logits z [.., V] (the
        engine's self_conditioning_signal for an unquantized embedding)."""
        probs = torch.softmax(upcast(processed_logits), dim=-1)
        return (probs @ self.model.decoder.embed_tokens.weight) * self.embed_scale

    def encode(self, ids, positions, masks):
        """Encoder pass (causal; the caller's masks carry the causal/sliding structure, one bool
        [B|1, 1, T, T] per layer type) with the encoder layer scalars -> per-layer (keys, values), keys
        rotated, each [B, kv_heads, T, D]. Like the engine, the last layer stops at its projections."""
        positions = as_positions(positions, ids)
        h = self.embed(ids)
        scalars = self.model.encoder.language_model.layers
        out = []
        for i, layer in enumerate(self.layers):
            if i == len(self.layers) - 1:
                _, k, v = layer.self_attn.project(layer.input_layernorm(h), positions)
                out.append((k, v))
                break
            h, kv = layer(h, positions, masks[layer.layer_type], None, scalars[i].layer_scalar)
            out.append(kv)
        return out

    def decode(self, ids, positions, prefix_kv, masks, self_conditioning=None, self_conditioning_rows=None):
        """Decoder pass -> float32 softcapped logits [B, T, V]; keys = [prefix keys ; own keys], masks bool
        [B|1, 1, T, T_prefix + T] per layer type; prefix_kv may be None (no prefix).

        `self_conditioning`: None, or the previous pass's *processed* logits [B, T, V] (softcapped logits /
        temperature), turned into soft embeddings here exactly as the engine does; pass them detached
        (the gradient still reaches the embedding through the soft-embedding product, as through any input).
        `self_conditioning_rows` (bool [B, T]) limits the signal to some positions: elsewhere the signal
        is zero, which is bit-for-bit the engine's first step (no signal)."""
        positions = as_positions(positions, ids)
        soft = None
        if self_conditioning is not None:
            soft = self.soft_embeddings(self_conditioning)
            if self_conditioning_rows is not None:
                soft = soft * self_conditioning_rows[..., None].to(soft.dtype)
        h = self.model.decoder.self_conditioning(self.embed(ids), soft)
        for i, layer in enumerate(self.layers):
            prefix = None if prefix_kv is None else prefix_kv[i]
            h, _ = layer(h, positions, masks[layer.layer_type], prefix, layer.layer_scalar)
        logits = self.model.decoder.norm(h) @ self.model.decoder.embed_tokens.weight.T
        cap = self.sizes.softcap
        return torch.tanh(logits / cap) * cap if cap else logits

    def training_logits(self, clean_ids, noisy_ids, layout: "Layout", self_conditioning=None):
        """Block-parallel forward: encoder over the clean rows, decoder over the noisy rows at once."""
        prefix = self.encode(clean_ids, layout.positions, layout.encoder_masks)
        return self.decode(noisy_ids, layout.positions, prefix, layout.decoder_masks, self_conditioning,
                           layout.canvas if self_conditioning is not None else None)


@dataclass
class Layout:
    positions: torch.Tensor        # [B, T] long, 0..T-1
    canvas: torch.Tensor           # [B, T] bool: positions that are denoised (count in the loss)
    block: torch.Tensor            # [B, T] long: canvas index per position, -1 off the canvases
    encoder_masks: dict            # layer type -> bool [1, 1, T, T] (causal: the same for every row)
    decoder_masks: dict            # layer type -> bool [B, 1, T, 2T]


def training_layout(prompt_lengths, num_blocks, canvas_length: int, sliding_window: int,
                    total_length: int | None = None) -> Layout:
    """Masks for block-parallel training of right-padded rows (layout in the module docstring).

    Row b holds prompt_lengths[b] prompt tokens then num_blocks[b] canvases; T defaults to the longest row.
    Canvas k of row b starts at start = P_b + k*C. Decoder query in canvas k sees encoder keys j < start
    (and j >= start - window + 1 on sliding layers: the engine's `sliding_key_start`, the same for every
    query of the canvas) and decoder keys of canvas k, bidirectionally. The encoder is causal with
    q - k < window on sliding layers (prefill and commit in the engine give exactly this)."""
    prompts = torch.as_tensor(prompt_lengths, dtype=torch.long)[:, None]
    ends = prompts + torch.as_tensor(num_blocks, dtype=torch.long)[:, None] * canvas_length
    length = int(ends.max()) if total_length is None else total_length
    if int(ends.max()) > length:
        raise ValueError(f"a row needs {int(ends.max())} positions; total_length is {length}")
    i = torch.arange(length)
    canvas = (i >= prompts) & (i < ends)                                     # [B, T]
    block = torch.where(canvas, torch.div(i - prompts, canvas_length, rounding_mode="floor"), -1)
    start = (prompts + block * canvas_length)[:, :, None]                    # [B, T, 1]
    query, key = i[:, None], i[None, :]
    causal = key <= query
    encoder = {FULL: causal[None, None], SLIDING: (causal & (query - key < sliding_window))[None, None]}
    before = canvas[:, :, None] & (key[None] < start)
    recent = before & (key[None] >= start - sliding_window + 1)
    own = canvas[:, :, None] & canvas[:, None, :] & (block[:, :, None] == block[:, None, :])
    own = own | (~canvas[:, :, None] & (query == key)[None])                 # off-canvas rows: themselves
    decoder = {FULL: torch.cat([before, own], -1)[:, None], SLIDING: torch.cat([recent, own], -1)[:, None]}
    return Layout(i.expand(len(prompts), -1), canvas, block, encoder, decoder)
