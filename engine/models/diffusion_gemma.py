"""DiffusionGemma (`diffusion_gemma`): the Gemma 4 MoE transformer used as a block-diffusion denoiser.

One set of weights runs in two modes (reference: shared/reference/diffusiongemma.md §3-5):

* encoder (`prefill`, `commit`): causal attention (plus a sliding window on sliding layers) over the
  prompt or a finished block, appending keys/values to the prefix cache; layer outputs are scaled by the
  encoder's own `layer_scalar`s.
* decoder (`denoise`): a canvas of token ids, mixed with a self-conditioning signal from the previous
  step, attends bidirectionally to itself and to the cached prefix, never writing the cache; layer
  outputs are scaled by the decoder's `layer_scalar`s. Returns float32 softcapped logits.

The parameter tree matches mlx-vlm's, so MLX-converted and mlx-community (mixed 8/4-bit) checkpoints
load unchanged: `model.decoder.{embed_tokens, layers.i.*, norm, self_conditioning.*}` and
`model.encoder.language_model.layers.i.layer_scalar`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import mlx.core as mx
import mlx.nn as nn

from ..errors import CheckpointError, InputError
from ..images import ImageProcessor
from .cache import LayerKV, PrefixCache
from .gemma4_vision import VISION_PREFIXES, MultimodalEmbedder, VisionConfig, VisionTower, keep_vision_weight
from .layers import RMSNorm, SwitchLinear, gather_sort, gelu_tanh, scatter_unsort

SLIDING = "sliding_attention"
FULL = "full_attention"

# Token-type ids the processor gives media placeholders (1 = image, 2 = video); everything else is text.
MEDIA_TOKEN_TYPES = (1, 2)

# Values of the released 26B-A4B checkpoint, used when a config leaves these keys out (as mlx-vlm does).
_DEFAULT_ROPE = {
    SLIDING: {"rope_type": "default", "rope_theta": 10000.0},
    FULL: {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
}
_REQUIRED_TEXT_KEYS = (
    "vocab_size", "hidden_size", "intermediate_size", "moe_intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "num_experts", "top_k_experts",
)


def _int_list(value) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in (value if isinstance(value, (list, tuple)) else [value])]


@dataclass
class TextConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    moe_intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    num_experts: int
    top_k_experts: int
    num_global_key_value_heads: int
    global_head_dim: int
    layer_types: list[str]
    rope_parameters: dict[str, dict]
    rms_norm_eps: float = 1e-6
    sliding_window: int = 1024
    final_logit_softcapping: float | None = 30.0
    pad_token_id: int = 0
    use_bidirectional_attention: str | None = "vision"

    @classmethod
    def from_dict(cls, params: dict) -> "TextConfig":
        for key in _REQUIRED_TEXT_KEYS:
            if params.get(key) is None:
                raise CheckpointError(f"config.json: text_config lacks the required key {key!r}")
        try:
            sizes = {key: int(params[key]) for key in _REQUIRED_TEXT_KEYS}
        except (TypeError, ValueError):
            raise CheckpointError("config.json: text_config sizes must be integers")
        layers = sizes["num_hidden_layers"]
        layer_types = params.get("layer_types") or _default_layer_types(layers)
        if len(layer_types) != layers or any(t not in (SLIDING, FULL) for t in layer_types):
            raise CheckpointError(
                f"config.json: layer_types must list {layers} entries of {SLIDING!r} / {FULL!r}"
            )
        bidirectional = params.get("use_bidirectional_attention", "vision")
        if bidirectional not in (None, "vision"):
            raise CheckpointError(f"use_bidirectional_attention={bidirectional!r} is not supported (only 'vision')")
        softcap = params.get("final_logit_softcapping", 30.0)
        return cls(
            **sizes,
            num_global_key_value_heads=int(params.get("num_global_key_value_heads") or sizes["num_key_value_heads"]),
            global_head_dim=int(params.get("global_head_dim") or sizes["head_dim"]),
            layer_types=list(layer_types),
            rope_parameters={kind: dict((params.get("rope_parameters") or {}).get(kind) or _DEFAULT_ROPE[kind])
                             for kind in (SLIDING, FULL)},
            rms_norm_eps=float(params.get("rms_norm_eps", 1e-6)),
            sliding_window=int(params.get("sliding_window") or 1024),
            final_logit_softcapping=float(softcap) if softcap else None,
            pad_token_id=int(params.get("pad_token_id") or 0),
            use_bidirectional_attention=bidirectional,
        )


def _default_layer_types(num_layers: int) -> list[str]:
    """Five sliding layers then one full, repeated; the last layer is always full (Gemma 4's layout)."""
    types = [FULL if (i + 1) % 6 == 0 else SLIDING for i in range(num_layers)]
    if types:
        types[-1] = FULL
    return types


@dataclass
class ModelConfig:
    text_config: TextConfig
    canvas_length: int = 256
    eos_token_ids: list[int] = field(default_factory=lambda: [1])
    boi_token_id: int | None = None
    eoi_token_id: int | None = None
    image_token_id: int | None = None
    video_token_id: int | None = None
    vision_config: dict | None = None   # kept raw: the vision tower (engine/models/gemma4_vision.py) reads it

    @classmethod
    def from_dict(cls, config: dict) -> "ModelConfig":
        text = config.get("text_config")
        if not isinstance(text, dict):
            raise CheckpointError("config.json has no text_config section; is this a DiffusionGemma checkpoint?")
        text_config = TextConfig.from_dict(text)
        eos = _int_list(config.get("eos_token_id")) or _int_list(text.get("eos_token_id")) or [1]

        def optional_id(key: str) -> int | None:
            return None if config.get(key) is None else int(config[key])

        vision = config.get("vision_config")
        return cls(
            text_config=text_config,
            canvas_length=int(config.get("canvas_length") or 256),
            eos_token_ids=eos,
            boi_token_id=optional_id("boi_token_id"),
            eoi_token_id=optional_id("eoi_token_id"),
            image_token_id=optional_id("image_token_id"),
            video_token_id=optional_id("video_token_id"),
            vision_config=dict(vision) if isinstance(vision, dict) else None,
        )


# ----------------------------------------------------------------------------------------------------
# Masks (pure functions, so the vision path and tests can reason about them directly)


def image_run_mask(token_type_ids: mx.array) -> mx.array | None:
    """[T, T] bool: True where query and key are media tokens of the same contiguous run, None if none.

    DiffusionGemma's encoder lets each image (and each video frame: boi/eoi are text tokens, so every
    frame is its own run) attend bidirectionally within itself; this block is OR-ed onto the causal mask.
    """
    types = mx.array(token_type_ids).reshape(-1)
    is_media = mx.zeros(types.shape, dtype=mx.bool_)
    for kind in MEDIA_TOKEN_TYPES:
        is_media = is_media | (types == kind)
    if not bool(mx.any(is_media).item()):
        return None
    previous = mx.concatenate([mx.zeros((1,), dtype=mx.bool_), is_media[:-1]])
    run = mx.cumsum((is_media & ~previous).astype(mx.int32))
    run = mx.where(is_media, run, 0)
    return (run[:, None] == run[None, :]) & is_media[:, None] & is_media[None, :]


def encoder_mask(offset: int, length: int, key_start: int, window: int | None = None,
                 media_runs: mx.array | None = None):
    """Encoder attention mask for queries at positions [offset, offset+length) over keys
    [key_start, offset+length): causal, and `q - k < window` when a window is given, OR-ed with the
    media-run block over the new tokens. Returns "causal" when that is all it is (no big bool array)."""
    end = offset + length
    window_matters = window is not None and end - 1 - key_start >= window
    if media_runs is None and not window_matters:
        return "causal"
    queries = mx.arange(offset, end)[:, None]
    keys = mx.arange(key_start, end)[None, :]
    visible = keys <= queries
    if window_matters:
        visible = visible & (queries - keys < window)
    if media_runs is not None:
        before = mx.zeros((length, offset - key_start), dtype=mx.bool_)
        visible = visible | mx.concatenate([before, media_runs], axis=1)
    return visible


def sliding_key_start(offset: int, window: int) -> int:
    """First cached position a sliding layer reads. In the encoder the first new query (at `offset`)
    sees keys with q - k < window; the decoder sees the last window-1 prefix positions (HF's sliding
    cache holds window-1). Both give the same start."""
    return max(0, offset - window + 1)


# ----------------------------------------------------------------------------------------------------
# Modules, named after the checkpoint's weights


@partial(mx.compile, shapeless=True)
def _geglu(gate: mx.array, up: mx.array) -> mx.array:
    return gelu_tanh(gate) * up


class MLP(nn.Module):
    """GeGLU: the dense "shared expert" of every layer, and the self-conditioning MLP."""

    def __init__(self, hidden_size: int, intermediate_size: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def __call__(self, x: mx.array) -> mx.array:
        return self.down_proj(_geglu(self.gate_proj(x), self.up_proj(x)))


class Rotary(nn.Module):
    """Rotate-half RoPE. "proportional" rotates only the first int(factor*D/2) pairs, with frequencies
    whose exponents still divide by the full head dim D (the first frequencies of a full-D RoPE)."""

    def __init__(self, head_dim: int, params: dict):
        super().__init__()
        self.head_dim = head_dim
        self.base = float(params.get("rope_theta", 10000.0))
        kind = params.get("rope_type", "default")
        self._freqs = None
        if kind == "proportional":
            rotated = int(float(params.get("partial_rotary_factor", 1.0)) * head_dim / 2)
            exponents = mx.arange(0, head_dim, 2, dtype=mx.float32) / head_dim
            # mx.fast.rope divides positions by these "wavelengths"; inf leaves a pair unrotated.
            self._freqs = mx.where(mx.arange(head_dim // 2) < rotated, self.base ** exponents, mx.inf)
        elif kind != "default" or float(params.get("partial_rotary_factor", 1.0)) != 1.0:
            raise CheckpointError(f"unsupported RoPE settings in config.json: {params}")

    def __call__(self, x: mx.array, offset: int) -> mx.array:
        if self._freqs is None:
            return mx.fast.rope(x, self.head_dim, traditional=False, base=self.base, scale=1.0, offset=offset)
        return mx.fast.rope(x, self.head_dim, traditional=False, base=None, scale=1.0, offset=offset,
                            freqs=self._freqs)


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
        batch, length, _ = x.shape

        def heads(projected: mx.array, count: int) -> mx.array:
            return projected.reshape(batch, length, count, self.head_dim)

        queries = self.rope(self.q_norm(heads(self.q_proj(x), self.num_heads)).transpose(0, 2, 1, 3), offset)
        raw_keys = heads(self.k_proj(x), self.num_kv_heads)
        raw_values = heads(self.v_proj(x), self.num_kv_heads) if "v_proj" in self else raw_keys
        keys = self.rope(self.k_norm(raw_keys).transpose(0, 2, 1, 3), offset)
        # Values are RMS-normalised without a weight and never rotated.
        values = mx.fast.rms_norm(raw_values, None, self.eps).transpose(0, 2, 1, 3)
        return queries, keys, values

    def __call__(self, x: mx.array, kv: LayerKV, *, offset: int, key_start: int, mask, write: bool) -> mx.array:
        batch, length, _ = x.shape
        queries, keys, values = self.project(x, offset)
        if write:
            keys, values = kv.update(keys, values)
            keys, values = keys[:, :, key_start:], values[:, :, key_start:]
        elif kv.keys is not None:
            keys = mx.concatenate([kv.keys[:, :, key_start:], keys], axis=2)
            values = mx.concatenate([kv.values[:, :, key_start:], values], axis=2)

        # The q/k norms take the place of 1/sqrt(d): the attention scale is 1.
        out = mx.fast.scaled_dot_product_attention(queries, keys, values, scale=1.0, mask=mask)
        return self.o_proj(out.transpose(0, 2, 1, 3).reshape(batch, length, -1))


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
        x = mx.expand_dims(x, (-2, -3))
        # Grouping token-expert pairs by expert pays off once there are enough of them.
        grouped = indices.size >= 64
        if grouped:
            x, expert_ids, inverse = gather_sort(x, indices)
        else:
            expert_ids = indices
        gate, up = mx.split(self.gate_up_proj(x, expert_ids, sorted_indices=grouped), 2, axis=-1)
        y = self.down_proj(_geglu(gate, up), expert_ids, sorted_indices=grouped)
        if grouped:
            y = scatter_unsort(y, inverse, indices.shape)
        y = y.squeeze(-2).astype(weights.dtype)
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
            embeddings = embeddings + self.down_proj(_geglu(self.gate_proj(normed), self.up_proj(normed)))
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


# ----------------------------------------------------------------------------------------------------
# The network


_PER_EXPERT = re.compile(r"^(?P<prefix>.*\.experts)\.(?P<expert>\d+)\.(?P<proj>gate_proj|up_proj|down_proj)\.(?P<kind>\w+)$")
_SPLIT_EXPERTS = re.compile(r"^(?P<prefix>.*\.experts)\.(?P<proj>gate_proj|up_proj)(?P<suffix>(\.\w+)?)$")


class Network(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        text = config.text_config
        self.vocab_size = text.vocab_size
        self.hidden_size = text.hidden_size
        self.canvas_length = config.canvas_length
        self.embed_scale = math.sqrt(text.hidden_size)
        self.model = Backbone(config)

    @property
    def layers(self) -> list[DecoderLayer]:
        return self.model.decoder.layers

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        return tuple(self.config.eos_token_ids)

    def make_cache(self) -> PrefixCache:
        return PrefixCache(len(self.layers))

    @property
    def has_vision(self) -> bool:
        return self.model.encoder.vision_tower is not None

    @property
    def self_conditioning_kind(self) -> str:
        """What `self_conditioning_signal` returns: "embeddings" [1,L,H], or "logits" [1,L,V] for a
        quantized embedding (the soft-embedding product then runs as a quantized matmul in `denoise`)."""
        return "logits" if isinstance(self.model.decoder.embed_tokens, nn.QuantizedEmbedding) else "embeddings"

    # -- weights ---------------------------------------------------------------------------------

    def sanitize(self, weights: dict[str, mx.array]) -> dict[str, mx.array]:
        """Hugging Face names -> this tree. Idempotent, so already-converted MLX checkpoints pass through."""
        weights = _stack_per_expert(weights)
        out = {}
        for name, value in weights.items():
            if name == "lm_head.weight" or "rotary_emb" in name:
                continue  # tied to embed_tokens / recomputed
            if name.startswith("model.encoder.language_model.") and not name.endswith(".layer_scalar"):
                continue  # the encoder's text weights are tied to the decoder's
            if name.startswith(VISION_PREFIXES) and not keep_vision_weight(name, self._vision_config):
                continue  # no tower (text-only config), or clip bounds of unclipped linears
            if name.endswith((".experts.gate_up_proj", ".experts.down_proj")):
                name += ".weight"
            out[name] = value
        return out

    @property
    def _vision_config(self) -> VisionConfig | None:
        return self.model.encoder.vision_tower.config if self.has_vision else None

    # -- encoder -----------------------------------------------------------------------------------

    def prefill(self, input_ids: mx.array, cache: PrefixCache | None = None, pixel_values=None,
                token_type_ids: mx.array | None = None) -> PrefixCache:
        """Encode a prompt (or the new part of one) into the prefix cache and return the cache.

        `pixel_values`: one [3, H, W] array per image whose soft tokens are in `input_ids`, in prompt
        order (images already in the cache are not passed again). `token_type_ids` [1, T] marks the soft
        tokens with 1; each image's run of soft tokens attends bidirectionally within itself."""
        cache = self.make_cache() if cache is None else cache
        # The public entry of a request's ids: checked here once, never again per step.
        input_ids = _checked_ids(input_ids, self.vocab_size)
        if token_type_ids is not None:
            token_type_ids = mx.array(token_type_ids).reshape(-1)
            if token_type_ids.size != input_ids.size:
                raise InputError(f"token_type_ids has {token_type_ids.size} entries for {input_ids.size} tokens")
        media_runs = None
        if token_type_ids is not None and self.config.text_config.use_bidirectional_attention == "vision":
            media_runs = image_run_mask(token_type_ids)
        self._encode(self.prompt_embeddings(input_ids, pixel_values, token_type_ids), cache, media_runs)
        return cache

    def prompt_embeddings(self, input_ids: mx.array, pixel_values=None, token_type_ids: mx.array | None = None) -> mx.array:
        """Encoder input [1, T, H]: scaled token embeddings (placeholders as pad), with the image features,
        unscaled, in place of the image soft tokens (token type 1, or the image token id without types)."""
        h = self._embed_prompt(_as_batch_row(input_ids))
        if pixel_values is None:
            return h
        if token_type_ids is not None:
            slots = mx.array(token_type_ids).reshape(-1) == 1
        else:
            slots = input_ids[0] == (-1 if self.config.image_token_id is None else self.config.image_token_id)
        features = self.image_features(pixel_values)
        wanted = int(slots.sum().item())
        if features.shape[0] != wanted:
            raise InputError(f"the prompt has {wanted} image tokens but the images give {features.shape[0]}")
        # The i-th image slot takes the i-th feature row (features are concatenated in prompt order).
        row = mx.maximum(mx.cumsum(slots.astype(mx.int32)) - 1, 0)
        return mx.where(slots[None, :, None], features.astype(h.dtype)[row][None], h)

    def image_features(self, pixel_values) -> mx.array:
        """float32 [soft tokens, hidden] for one [3, H, W] image or a list of them (concatenated in order):
        the vision tower, then the multimodal embedder into the text hidden size."""
        if not self.has_vision:
            raise InputError("this checkpoint has no vision tower; it cannot take images")
        images = [pixel_values] if getattr(pixel_values, "ndim", None) == 3 else list(pixel_values)
        if not images:
            raise InputError("no image pixels were given")
        encoder = self.model.encoder
        features = [encoder.embed_vision(encoder.vision_tower(mx.array(image))) for image in images]
        return mx.concatenate(features).astype(mx.float32)

    def commit(self, canvas_ids: mx.array, cache: PrefixCache) -> PrefixCache:
        """Append a finished block to the cache (causal encoder pass, no media overlay).

        The block's ids are embedded as they are: the official implementation maps media placeholders to
        pad only where vision features replace them, and a generated `<|image|>` id has none (checked by
        the official argmax-proposal trace, whose block 1 contains one)."""
        self._encode(self._embed(_as_batch_row(canvas_ids)), cache, None)
        return cache

    def _embed_prompt(self, input_ids: mx.array) -> mx.array:
        # Media placeholders are embedded as pad (the vision features overwrite them).
        for media_id in (self.config.image_token_id, self.config.video_token_id):
            if media_id is not None:
                input_ids = mx.where(input_ids == media_id, self.config.text_config.pad_token_id, input_ids)
        return self._embed(input_ids)

    def _encode(self, h: mx.array, cache: PrefixCache, media_runs: mx.array | None) -> None:
        offset, length = cache.offset, h.shape[1]
        window = self.config.text_config.sliding_window
        starts = {FULL: 0, SLIDING: sliding_key_start(offset, window)}
        masks = {FULL: encoder_mask(offset, length, 0, None, media_runs),
                 SLIDING: encoder_mask(offset, length, starts[SLIDING], window, media_runs)}
        scalars = self.model.encoder.language_model.layers
        *layers, last = self.layers
        for layer, kv, scalar in zip(layers, cache, scalars):
            kind = layer.layer_type
            h = layer(h, kv, layer_scalar=scalar.layer_scalar, offset=offset, key_start=starts[kind],
                      mask=masks[kind], write=True)
        # Only keys/values are kept from an encoder pass, so the last layer stops at its projections.
        _, keys, values = last.self_attn.project(last.input_layernorm(h), offset)
        cache[-1].update(keys, values)
        mx.eval(cache.arrays())

    # -- decoder -----------------------------------------------------------------------------------

    def denoise(self, canvas_ids: mx.array, cache: PrefixCache, self_conditioning: mx.array | None = None) -> mx.array:
        """float32 softcapped logits [1, L, V] for a canvas; reads the cache, never writes it.

        `self_conditioning` is the previous step's `self_conditioning_signal(...)` (None on a canvas's
        first step). Processed logits [.., V] are accepted too, for either kind of embedding."""
        embeddings = self._embed(_as_batch_row(canvas_ids))
        soft = None if self_conditioning is None else self._soft_embeddings(self_conditioning, embeddings.dtype)
        h = self.model.decoder.self_conditioning(embeddings, soft)
        offset = cache.offset
        starts = {FULL: 0, SLIDING: sliding_key_start(offset, self.config.text_config.sliding_window)}
        for layer, kv in zip(self.layers, cache):
            # No mask: the canvas is bidirectional, and the key start already hides out-of-window prefix keys.
            h = layer(h, kv, layer_scalar=layer.layer_scalar, offset=offset, key_start=starts[layer.layer_type],
                      mask=None, write=False)
        logits = self.model.decoder.embed_tokens.as_linear(self.model.decoder.norm(h)).astype(mx.float32)
        cap = self.config.text_config.final_logit_softcapping
        return mx.tanh(logits / cap) * cap if cap else logits

    def self_conditioning_signal(self, processed_logits: mx.array) -> mx.array:
        """What the next `denoise` takes as `self_conditioning`, from this step's processed logits
        (softcapped logits / temperature): softmax(z) @ E * sqrt(H), or z itself for a quantized E."""
        if self.self_conditioning_kind == "logits":
            return processed_logits.astype(mx.float32)
        return self._soft_embeddings_from_logits(processed_logits)

    def _soft_embeddings(self, signal: mx.array, dtype: mx.Dtype) -> mx.array:
        if signal.shape[-1] == self.vocab_size and (self.vocab_size != self.hidden_size
                                                    or self.self_conditioning_kind == "logits"):
            return self._soft_embeddings_from_logits(signal)
        if signal.shape[-1] != self.hidden_size:
            raise InputError(f"self-conditioning signal has width {signal.shape[-1]}; expected "
                             f"{self.hidden_size} (embeddings) or {self.vocab_size} (logits)")
        return signal.astype(dtype)

    def _soft_embeddings_from_logits(self, logits: mx.array) -> mx.array:
        embed = self.model.decoder.embed_tokens
        probs = mx.softmax(logits.astype(mx.float32), axis=-1, precise=True)
        if isinstance(embed, nn.QuantizedEmbedding):
            # probs [L, V] times the quantized [V, H] table as stored: no dequantized copy of E.
            probs = probs.astype(embed.scales.dtype)
            soft = mx.quantized_matmul(probs, embed["weight"], embed.scales, embed.get("biases"), transpose=False,
                                       group_size=embed.group_size, bits=embed.bits, mode=embed.mode)
        else:
            soft = probs.astype(embed.weight.dtype) @ embed.weight
        return soft * self.embed_scale

    def _embed(self, ids: mx.array) -> mx.array:
        rows = self.model.decoder.embed_tokens(ids)
        # The sqrt(H) scale is applied in float32 and the result cast back to the model dtype.
        return (rows.astype(mx.float32) * self.embed_scale).astype(rows.dtype)


def make_processor(path, config: ModelConfig, tokenizer=None) -> ImageProcessor | None:
    """The image processor (engine.images) when the checkpoint has a vision tower, else None.

    The image/boi/eoi token ids come from config.json; `tokenizer` is not needed (the loader passes it
    to every family)."""
    if config.vision_config is None:
        return None
    return ImageProcessor.from_checkpoint(path, config)


def _as_batch_row(ids: Any) -> mx.array:
    """A plain sequence of ids is one batch row; no value check (that costs host syncs, done once per request)."""
    ids = mx.array(ids)
    return ids[None] if ids.ndim == 1 else ids


def _checked_ids(ids: Any, vocab_size: int) -> mx.array:
    ids = _as_batch_row(ids)
    if ids.ndim != 2 or ids.shape[0] != 1 or ids.shape[1] == 0:
        raise InputError(f"token ids must have shape [1, length>0], got {tuple(ids.shape)}")
    if not mx.issubdtype(ids.dtype, mx.integer):
        raise InputError(f"token ids must be integers, got {ids.dtype}")
    low, high = mx.min(ids).item(), mx.max(ids).item()
    if low < 0 or high >= vocab_size:
        raise InputError(f"token id {high if high >= vocab_size else low} is outside the vocabulary (0..{vocab_size - 1})")
    return ids.astype(mx.int32)


def _stack_per_expert(weights: dict[str, mx.array]) -> dict[str, mx.array]:
    """Fuse per-expert tensors (`experts.<e>.gate_proj.weight`, ...) and separate `experts.gate_proj` /
    `experts.up_proj` into the stacked `experts.gate_up_proj` / `experts.down_proj` layout (gate first).
    Quantization is per output row, so stacking and concatenating weight/scales/biases alike is exact."""
    per_expert: dict[tuple[str, str, str], dict[int, mx.array]] = {}
    split: dict[tuple[str, str], dict[str, mx.array]] = {}
    out = {}
    for name, value in weights.items():
        if match := _PER_EXPERT.match(name):
            key = (match["prefix"], match["proj"], match["kind"])
            per_expert.setdefault(key, {})[int(match["expert"])] = value
        else:
            out[name] = value
    for (prefix, proj, kind), experts in per_expert.items():
        if sorted(experts) != list(range(len(experts))):
            raise CheckpointError(f"checkpoint has an incomplete set of experts under {prefix}.*.{proj}")
        out[f"{prefix}.{proj}.{kind}"] = mx.stack([experts[e] for e in range(len(experts))])
    for name in list(out):
        if match := _SPLIT_EXPERTS.match(name):
            split.setdefault((match["prefix"], match["suffix"]), {})[match["proj"]] = out.pop(name)
    for (prefix, suffix), parts in split.items():
        if set(parts) != {"gate_proj", "up_proj"}:
            raise CheckpointError(f"checkpoint has {prefix}.{next(iter(parts))} without its partner")
        out[f"{prefix}.gate_up_proj{suffix}"] = mx.concatenate([parts["gate_proj"], parts["up_proj"]], axis=-2)
    return out
