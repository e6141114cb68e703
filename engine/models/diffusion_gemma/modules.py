"""DiffusionGemma's modules, named after the checkpoint's weights (`model.decoder.layers.i.*`, ...)."""

from __future__ import annotations


import mlx.core as mx
import mlx.nn as nn

from ...errors import CheckpointError
from ..cache import LayerKV
from ..gemma4_vision import MultimodalEmbedder, VisionConfig, VisionTower
from .. import ops
from ..layers import RMSNorm, SwitchLinear, through_experts
from .config import FULL, ModelConfig, TextConfig

class MLP(nn.Module):
    """GeGLU: the dense "shared expert" of every layer, and the self-conditioning MLP."""

    def __init__(self, hidden_size: int, intermediate_size: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def __call__(self, x: mx.array) -> mx.array:
        return self.down_proj(ops.geglu(self.gate_proj(x), self.up_proj(x)))


class Rotary(nn.Module):
    """Rotate-half RoPE. "proportional" rotates only the first int(factor*D/2) pairs, with frequencies
    whose exponents still divide by the full head dim D (the first frequencies of a full-D RoPE)."""

    def __init__(self, head_dim: int, params: dict):
        super().__init__()
        self.head_dim = head_dim
        self.base = float(params.get("rope_theta", 10000.0))
        kind = params.get("rope_type", "default")
        self._freqs = rotated = None
        if kind == "proportional":
            rotated = int(float(params.get("partial_rotary_factor", 1.0)) * head_dim / 2)
            exponents = mx.arange(0, head_dim, 2, dtype=mx.float32) / head_dim
            # mx.fast.rope divides positions by these "wavelengths"; inf leaves a pair unrotated.
            self._freqs = mx.where(mx.arange(head_dim // 2) < rotated, self.base ** exponents, mx.inf)
        elif kind != "default" or float(params.get("partial_rotary_factor", 1.0)) != 1.0:
            raise CheckpointError(f"unsupported RoPE settings in config.json: {params}")
        # the host's frequencies (engine.cpu.ops.rope): the same pairs turn
        self._omega = ops.rope_inverse_frequencies(self.base, head_dim, rotated_pairs=rotated)

    def __call__(self, x: mx.array, offset: int) -> mx.array:
        base = self.base if self._freqs is None else None
        return ops.rope(x, offset, omega=self._omega, dims=self.head_dim, base=base, freqs=self._freqs)


class Attention(nn.Module):
    def __init__(self, config: TextConfig, layer_type: str):
        super().__init__()
        full = layer_type == FULL
        self.head_dim = config.global_head_dim if full else config.head_dim
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_global_key_value_heads if full else config.num_key_value_heads
        self.eps = config.rms_norm_eps
        hidden = config.hidden_size
        self.q_proj = nn.Linear(hidden, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, self.num_kv_heads * self.head_dim, bias=False)
        if not full:  # full layers take their values from the key projection ("k_eq_v")
            self.v_proj = nn.Linear(hidden, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, hidden, bias=False)
        self.q_norm = RMSNorm(self.head_dim, config.rms_norm_eps)
        self.k_norm = RMSNorm(self.head_dim, config.rms_norm_eps)
        self.rope = Rotary(self.head_dim, config.rope_parameters[layer_type])

    def project(self, x: mx.array, offset: int) -> tuple[mx.array, mx.array, mx.array]:
        """Queries, keys and values [B, heads, T, D] for tokens at positions offset, offset+1, ..."""
        queries, keys, values = self.project_unrotated(x)
        return self.rope(queries, offset), self.rope(keys, offset), values

    def project_unrotated(self, x: mx.array) -> tuple[mx.array, mx.array, mx.array]:
        """`project` before RoPE: every row on its own, so the rows of several requests may share one call."""
        batch, length, _ = x.shape

        def heads(projected: mx.array, count: int) -> mx.array:
            return projected.reshape(batch, length, count, self.head_dim)

        queries = self.q_norm(heads(self.q_proj(x), self.num_heads)).transpose(0, 2, 1, 3)
        raw_keys = heads(self.k_proj(x), self.num_kv_heads)
        raw_values = heads(self.v_proj(x), self.num_kv_heads) if "v_proj" in self else raw_keys
        keys = self.k_norm(raw_keys).transpose(0, 2, 1, 3)
        # Values are RMS-normalised without a weight and never rotated.
        values = mx.fast.rms_norm(raw_values, None, self.eps).transpose(0, 2, 1, 3)
        ops.before_rope(queries, keys, values)
        return queries, keys, values

    def __call__(self, x: mx.array, kv: LayerKV, *, offset: int, key_start: int, mask, write: bool) -> mx.array:
        batch, length, _ = x.shape
        queries, keys, values = self.project(x, offset)
        out = self.attend(queries, keys, values, kv, key_start=key_start, mask=mask, write=write)
        return self.o_proj(out.transpose(0, 2, 1, 3).reshape(batch, length, -1))

    def attend(self, queries: mx.array, keys: mx.array, values: mx.array, kv: LayerKV, *, key_start: int, mask,
               write: bool) -> mx.array:
        """Rotated queries against the cached keys from `key_start` and the new ones: [B, heads, T, D]."""
        if write:
            keys, values = kv.update(keys, values)
            keys, values = keys[:, :, key_start:], values[:, :, key_start:]
        elif kv.keys is not None:
            keys = mx.concatenate([kv.keys[:, :, key_start:], keys], axis=2)
            values = mx.concatenate([kv.values[:, :, key_start:], values], axis=2)

        # The q/k norms take the place of 1/sqrt(d): the attention scale is 1.
        return ops.attention(queries, keys, values, scale=1.0, mask=mask)


class Router(nn.Module):
    def __init__(self, config: TextConfig):
        super().__init__()
        self.proj = nn.Linear(config.hidden_size, config.num_experts, bias=False)
        self.scale = mx.ones((config.hidden_size,))
        self.per_expert_scale = mx.ones((config.num_experts,))
        self.top_k = config.top_k_experts
        self.eps = config.rms_norm_eps
        self.input_scale = config.hidden_size ** -0.5

    def __call__(self, residual: mx.array) -> tuple[mx.array, mx.array]:
        scores = self.proj(mx.fast.rms_norm(residual, None, self.eps) * self.scale * self.input_scale)
        # Integer routing decisions carry no gradient (training goes through the weights only).
        indices = mx.stop_gradient(mx.argpartition(scores, kth=-self.top_k, axis=-1)[..., -self.top_k:])
        weights = mx.softmax(mx.take_along_axis(scores, indices, axis=-1).astype(mx.float32), axis=-1, precise=True)
        return indices, (weights * self.per_expert_scale[indices]).astype(residual.dtype)


class Experts(nn.Module):
    def __init__(self, config: TextConfig):
        super().__init__()
        self.gate_up_proj = SwitchLinear(config.hidden_size, 2 * config.moe_intermediate_size, config.num_experts)
        self.down_proj = SwitchLinear(config.moe_intermediate_size, config.hidden_size, config.num_experts)

    def __call__(self, x: mx.array, indices: mx.array, weights: mx.array) -> mx.array:
        """x [N, H], indices/weights [N, k] -> [N, H]."""
        routed = ops.routed_experts(x, indices, weights, self.gate_up_proj, self.down_proj, "geglu",
                                    mlx=lambda: self._gather(x, indices, weights))
        return routed.astype(weights.dtype)

    def _gather(self, x: mx.array, indices: mx.array, weights: mx.array) -> mx.array:
        def run(rows, expert_ids, grouped):
            # one product for gate and up: the checkpoint stacks them in one [experts, 2I, H] weight
            gate, up = mx.split(self.gate_up_proj(rows, expert_ids, sorted_indices=grouped), 2, axis=-1)
            return self.down_proj(ops.geglu(gate, up), expert_ids, sorted_indices=grouped)

        y = through_experts(x, indices, run).astype(weights.dtype)
        return (y * weights[..., None]).sum(axis=-2)


class DecoderLayer(nn.Module):
    def __init__(self, config: TextConfig, layer_type: str):
        super().__init__()
        hidden, eps = config.hidden_size, config.rms_norm_eps
        self.layer_type = layer_type
        self.self_attn = Attention(config, layer_type)
        self.mlp = MLP(hidden, config.intermediate_size)
        self.router = Router(config)
        self.experts = Experts(config)
        self.input_layernorm = RMSNorm(hidden, eps)
        self.post_attention_layernorm = RMSNorm(hidden, eps)
        self.pre_feedforward_layernorm = RMSNorm(hidden, eps)
        self.post_feedforward_layernorm_1 = RMSNorm(hidden, eps)
        self.pre_feedforward_layernorm_2 = RMSNorm(hidden, eps)
        self.post_feedforward_layernorm_2 = RMSNorm(hidden, eps)
        self.post_feedforward_layernorm = RMSNorm(hidden, eps)
        self.layer_scalar = mx.ones((1,))

    def __call__(self, x: mx.array, kv: LayerKV, *, layer_scalar: mx.array, **attention) -> mx.array:
        h = x + self.post_attention_layernorm(self.self_attn(self.input_layernorm(x), kv, **attention))
        return self.feed_forward(h, layer_scalar)

    def feed_forward(self, h: mx.array, layer_scalar: mx.array) -> mx.array:
        """The dense MLP and the routed experts after attention: every row on its own (batchable)."""
        dense = self.post_feedforward_layernorm_1(self.mlp(self.pre_feedforward_layernorm(h)))
        flat = h.reshape(-1, h.shape[-1])
        # The router reads the un-normalised residual; the experts read their own pre-norm.
        indices, weights = self.router(flat)
        routed = self.experts(self.pre_feedforward_layernorm_2(flat), indices, weights).reshape(h.shape)
        routed = self.post_feedforward_layernorm_2(routed)
        return (h + self.post_feedforward_layernorm(dense + routed)) * layer_scalar


class SelfConditioning(nn.Module):
    """Mixes the previous step's soft embedding into the canvas embedding: norm0(e + MLP(pre_norm(s)))."""

    def __init__(self, config: TextConfig):
        super().__init__()
        self.pre_norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.eps = config.rms_norm_eps

    def __call__(self, embeddings: mx.array, soft_embeddings: mx.array | None) -> mx.array:
        if soft_embeddings is not None:
            normed = self.pre_norm(soft_embeddings)
            # No biases: a zero signal adds exactly zero, so the first step may skip this.
            embeddings = embeddings + self.down_proj(ops.geglu(self.gate_proj(normed), self.up_proj(normed)))
        return mx.fast.rms_norm(embeddings, None, self.eps)


class Decoder(nn.Module):
    def __init__(self, config: TextConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = [DecoderLayer(config, kind) for kind in config.layer_types]
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_conditioning = SelfConditioning(config)


class EncoderLayer(nn.Module):
    """The encoder shares every decoder weight except this per-layer output scale."""

    def __init__(self):
        super().__init__()
        self.layer_scalar = mx.ones((1,))


class EncoderLanguageModel(nn.Module):
    def __init__(self, num_layers: int):
        super().__init__()
        self.layers = [EncoderLayer() for _ in range(num_layers)]


class Encoder(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.language_model = EncoderLanguageModel(config.text_config.num_hidden_layers)
        self.vision_tower = None
        self.embed_vision = None
        if config.vision_config is not None:
            vision = VisionConfig.from_dict(config.vision_config)
            self.vision_tower = VisionTower(vision)
            self.embed_vision = MultimodalEmbedder(vision.hidden_size, config.text_config.hidden_size,
                                                   vision.rms_norm_eps)


class Backbone(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.decoder = Decoder(config.text_config)
        self.encoder = Encoder(config)
