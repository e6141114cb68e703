"""Gemma 4 vision tower and the multimodal embedder that feeds its output to DiffusionGemma.

Module names follow the checkpoint (`model.encoder.vision_tower.*`, `model.encoder.embed_vision.*`),
so weights load without renaming. One image at a time: pixels [3, H, W] (H, W multiples of
patch x pooling, as `engine.images.processor.ImageProcessor` makes them) -> one vector per 3x3 block of patches.
Every patch is real (no padding to a fixed budget), so attention needs no mask.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import mlx.core as mx
import mlx.nn as nn

from ..errors import InputError
from . import ops
from .layers import RMSNorm, rms_norm_noscale


@dataclass
class VisionConfig:
    hidden_size: int = 1152
    intermediate_size: int = 4304
    num_hidden_layers: int = 27
    num_attention_heads: int = 16
    num_key_value_heads: int = 16
    head_dim: int = 72
    patch_size: int = 16
    pooling_kernel_size: int = 3
    position_embedding_size: int = 10240
    rms_norm_eps: float = 1e-6
    rope_parameters: dict = field(default_factory=lambda: {"rope_type": "default", "rope_theta": 100.0})
    standardize: bool = False
    use_clipped_linears: bool = False

    @classmethod
    def from_dict(cls, params: dict) -> "VisionConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in params.items() if k in known and v is not None})

    @property
    def rope_theta(self) -> float:
        return float((self.rope_parameters or {}).get("rope_theta", 100.0))


class ClippableLinear(nn.Module):
    """A bias-free linear layer under a `.linear` name; with `use_clipped_linears` its input and output
    are clamped to calibration bounds stored in the checkpoint (Gemma 4's quantization-aware towers)."""

    def __init__(self, input_dims: int, output_dims: int, clipped: bool):
        super().__init__()
        self.linear = nn.Linear(input_dims, output_dims, bias=False)
        self.clipped = clipped
        if clipped:
            self.input_min, self.input_max = mx.array(-math.inf), mx.array(math.inf)
            self.output_min, self.output_max = mx.array(-math.inf), mx.array(math.inf)

    def __call__(self, x: mx.array) -> mx.array:
        if not self.clipped:
            return self.linear(x)
        x = mx.clip(x, self.input_min, self.input_max)
        return mx.clip(self.linear(x), self.output_min, self.output_max)


def rope_2d(x: mx.array, cos: mx.array, sin: mx.array) -> mx.array:
    """Rotate the first half of each head by the patch column and the second half by the row; inside each
    half the pairing is rotate-half (j with j + d/4). `cos`/`sin` [N, 1, head_dim] come from `rope_tables`."""
    quarter = x.shape[-1] // 4
    col_a, col_b, row_a, row_b = (x[..., i * quarter:(i + 1) * quarter] for i in range(4))
    rotated = mx.concatenate([-col_b, col_a, -row_b, row_a], axis=-1)
    return x * cos + rotated * sin


def rope_tables(rows: mx.array, cols: mx.array, head_dim: int, theta: float, dtype) -> tuple[mx.array, mx.array]:
    half = head_dim // 2
    inv_freq = theta ** (-mx.arange(0, half, 2, dtype=mx.float32) / half)   # half/2 frequencies per axis
    col_angles = cols[:, None].astype(mx.float32) * inv_freq
    row_angles = rows[:, None].astype(mx.float32) * inv_freq
    angles = mx.concatenate([col_angles, col_angles, row_angles, row_angles], axis=-1)[:, None, :]
    return mx.cos(angles).astype(dtype), mx.sin(angles).astype(dtype)


class VisionAttention(nn.Module):
    def __init__(self, config: VisionConfig):
        super().__init__()
        self.num_heads, self.num_kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.head_dim, self.eps = config.head_dim, config.rms_norm_eps
        clipped = config.use_clipped_linears
        self.q_proj = ClippableLinear(config.hidden_size, self.num_heads * self.head_dim, clipped)
        self.k_proj = ClippableLinear(config.hidden_size, self.num_kv_heads * self.head_dim, clipped)
        self.v_proj = ClippableLinear(config.hidden_size, self.num_kv_heads * self.head_dim, clipped)
        self.o_proj = ClippableLinear(self.num_heads * self.head_dim, config.hidden_size, clipped)
        self.q_norm = RMSNorm(self.head_dim, eps=config.rms_norm_eps)
        self.k_norm = RMSNorm(self.head_dim, eps=config.rms_norm_eps)

    def __call__(self, x: mx.array, cos: mx.array, sin: mx.array) -> mx.array:
        n = x.shape[0]
        q = rope_2d(self.q_norm(self.q_proj(x).reshape(n, self.num_heads, self.head_dim)), cos, sin)
        k = rope_2d(self.k_norm(self.k_proj(x).reshape(n, self.num_kv_heads, self.head_dim)), cos, sin)
        v = rms_norm_noscale(self.v_proj(x).reshape(n, self.num_kv_heads, self.head_dim), self.eps)
        q, k, v = (t.transpose(1, 0, 2)[None] for t in (q, k, v))
        # scale 1.0: the q/k norms already set the logit scale
        out = ops.attention(q, k, v, scale=1.0)
        return self.o_proj(out[0].transpose(1, 0, 2).reshape(n, -1))


class VisionMLP(nn.Module):
    def __init__(self, config: VisionConfig):
        super().__init__()
        clipped = config.use_clipped_linears
        self.gate_proj = ClippableLinear(config.hidden_size, config.intermediate_size, clipped)
        self.up_proj = ClippableLinear(config.hidden_size, config.intermediate_size, clipped)
        self.down_proj = ClippableLinear(config.intermediate_size, config.hidden_size, clipped)

    def __call__(self, x: mx.array) -> mx.array:
        return self.down_proj(ops.geglu(self.gate_proj(x), self.up_proj(x)))


class VisionEncoderLayer(nn.Module):
    def __init__(self, config: VisionConfig):
        super().__init__()
        self.self_attn = VisionAttention(config)
        self.mlp = VisionMLP(config)
        eps = config.rms_norm_eps
        self.input_layernorm = RMSNorm(config.hidden_size, eps=eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=eps)
        self.pre_feedforward_layernorm = RMSNorm(config.hidden_size, eps=eps)
        self.post_feedforward_layernorm = RMSNorm(config.hidden_size, eps=eps)

    def __call__(self, x: mx.array, cos: mx.array, sin: mx.array) -> mx.array:
        h = x + self.post_attention_layernorm(self.self_attn(self.input_layernorm(x), cos, sin))
        return h + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(h)))


class VisionEncoder(nn.Module):
    def __init__(self, config: VisionConfig):
        super().__init__()
        self.layers = [VisionEncoderLayer(config) for _ in range(config.num_hidden_layers)]


class PatchEmbedder(nn.Module):
    def __init__(self, config: VisionConfig):
        super().__init__()
        self.patch_size = config.patch_size
        self.input_proj = nn.Linear(3 * config.patch_size ** 2, config.hidden_size, bias=False)
        # [2, positions, hidden]: axis 0 holds the column (x) table, then the row (y) table
        self.position_embedding_table = mx.zeros((2, config.position_embedding_size, config.hidden_size))

    def __call__(self, pixel_values: mx.array, rows: mx.array, cols: mx.array) -> mx.array:
        p = self.patch_size
        _, height, width = pixel_values.shape
        # raster order of patches, each flattened as (row in patch, column in patch, channel)
        patches = pixel_values.reshape(3, height // p, p, width // p, p).transpose(1, 3, 2, 4, 0)
        patches = patches.reshape(-1, 3 * p * p)
        x = self.input_proj((2.0 * (patches - 0.5)).astype(self.input_proj.weight.dtype))
        return x + (self._position(0, cols) + self._position(1, rows))

    def _position(self, axis: int, index: mx.array) -> mx.array:
        # Indices past the table (images wider than the table in patches) read as zero rows, as the
        # reference's one-hot lookup does.
        table = self.position_embedding_table[axis]
        size = table.shape[0]
        inside = (index < size)[:, None].astype(table.dtype)
        return table[mx.minimum(index, size - 1)] * inside


class VisionTower(nn.Module):
    """pixels [3, H, W] -> [(H/p/k) * (W/p/k), hidden]: patch embedding + 2-D positions, encoder layers,
    k x k average pooling x sqrt(hidden), optional standardisation."""

    def __init__(self, config: VisionConfig):
        super().__init__()
        self.config = config
        self.patch_embedder = PatchEmbedder(config)
        self.encoder = VisionEncoder(config)
        if config.standardize:
            self.std_bias = mx.zeros((config.hidden_size,))
            self.std_scale = mx.ones((config.hidden_size,))

    def __call__(self, pixel_values: mx.array) -> mx.array:
        config = self.config
        p, k = config.patch_size, config.pooling_kernel_size
        if pixel_values.ndim != 3 or pixel_values.shape[0] != 3:
            raise InputError(f"pixel values must be [3, H, W], got {tuple(pixel_values.shape)}")
        _, height, width = pixel_values.shape
        if height % (p * k) or width % (p * k):
            raise InputError(f"image sides must be multiples of {p * k} pixels, got {width}x{height}")
        grid_h, grid_w = height // p, width // p
        rows = mx.repeat(mx.arange(grid_h), grid_w)
        cols = mx.tile(mx.arange(grid_w), grid_h)

        x = self.patch_embedder(pixel_values, rows, cols)
        cos, sin = rope_tables(rows, cols, config.head_dim, config.rope_theta, x.dtype)
        for layer in self.encoder.layers:
            x = layer(x, cos, sin)

        # average each k x k block of patches; pooled vectors in raster order of the pooled grid
        pooled = x.astype(mx.float32).reshape(grid_h // k, k, grid_w // k, k, -1).mean(axis=(1, 3))
        x = pooled.reshape(-1, x.shape[-1]).astype(x.dtype) * math.sqrt(config.hidden_size)
        if config.standardize:
            x = (x - self.std_bias) * self.std_scale
        return x


class MultimodalEmbedder(nn.Module):
    """Vision vectors -> text hidden size: weight-free RMSNorm, then a bias-free projection."""

    def __init__(self, vision_hidden_size: int, text_hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.embedding_projection = nn.Linear(vision_hidden_size, text_hidden_size, bias=False)

    def __call__(self, x: mx.array) -> mx.array:
        return self.embedding_projection(rms_norm_noscale(x, self.eps))


CLIP_SUFFIXES = (".input_min", ".input_max", ".output_min", ".output_max")
VISION_PREFIXES = ("model.encoder.vision_tower.", "model.encoder.embed_vision.")


def keep_vision_weight(name: str, config: VisionConfig | None) -> bool:
    """For a checkpoint tensor under VISION_PREFIXES: whether the network has a place for it. Text-only
    configs drop every vision tensor; clip calibration scalars exist only with `use_clipped_linears`."""
    if config is None:
        return False
    return config.use_clipped_linears or not name.endswith(CLIP_SUFFIXES)
