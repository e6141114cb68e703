"""LLaDA-2 MoE (`model_type: llada2_moe`): inclusionAI's block-diffusion mixture-of-experts model.

Parameter names follow the Hugging Face checkpoint (`word_embeddings`, fused `query_key_value`, `dense`,
`query_layernorm` / `key_layernorm`, router `gate` with `expert_bias`) under mlx-vlm's `language_model.`
prefix, with the per-expert MLPs stacked into `switch_mlp` — so original HF folders, mlx-vlm conversions and
mlx-community quantized repos all load through `sanitize()`.

Attention is block-causal: a position sees its own block bidirectionally and every earlier block. Blocks are
aligned to absolute position 0, so finished blocks live in a prefix KV cache and the active block is always
run alone against it (no mask needed); only a multi-block prefill needs an explicit mask.
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn

from ..errors import CheckpointError
from . import chunking
from . import ops
from .cache import PrefixCache
from .chunking import Cancelled
from .layers import RMSNorm, SwitchLinear, through_experts
# The config has its own module; `ModelConfig` is part of this family module's interface (engine.io.loader).
from .llada2_config import DEFAULT_BLOCK_LENGTH, DEFAULT_MASK_TOKEN_ID, DEFAULT_PAD_TOKEN_ID, ModelConfig  # noqa: F401


class Attention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        self.rotary_dim = config.rotary_dim
        self.rope_theta = config.rope_theta
        self._omega = ops.rope_inverse_frequencies(self.rope_theta, self.rotary_dim)
        self.scale = self.head_dim**-0.5
        self.query_key_value = nn.Linear(
            config.hidden_size, (self.num_heads + 2 * self.num_kv_heads) * self.head_dim, bias=config.use_qkv_bias
        )
        self.dense = nn.Linear(self.num_heads * self.head_dim, config.hidden_size, bias=config.use_bias)
        self.use_qk_norm = config.use_qk_norm
        if self.use_qk_norm:
            self.query_layernorm = RMSNorm(self.head_dim, config.rms_norm_eps)
            self.key_layernorm = RMSNorm(self.head_dim, config.rms_norm_eps)

    def _rope(self, x: mx.array, offset: int) -> mx.array:
        # Rotate-half RoPE on the first rotary_dim channels of each head; the rest pass through.
        return ops.rope(x, offset, omega=self._omega, dims=self.rotary_dim, base=self.rope_theta)

    def __call__(self, x: mx.array, layer_cache, mask, commit: bool) -> mx.array:
        batch, length, _ = x.shape
        queries, keys, values = self.project_unrotated(x)
        out = self.attend(queries, keys, values, layer_cache, mask, commit)
        return self.dense(out.transpose(0, 2, 1, 3).reshape(batch, length, -1))

    def project_unrotated(self, x: mx.array) -> tuple[mx.array, mx.array, mx.array]:
        """Queries, keys and values [B, heads, T, D] before RoPE: every row on its own (batchable)."""
        batch, length, _ = x.shape
        qkv = self.query_key_value(x).reshape(batch, length, self.num_heads + 2 * self.num_kv_heads, self.head_dim)
        queries, keys, values = mx.split(qkv, [self.num_heads, self.num_heads + self.num_kv_heads], axis=2)
        if self.use_qk_norm:
            queries, keys = self.query_layernorm(queries), self.key_layernorm(keys)
        queries, keys, values = (a.transpose(0, 2, 1, 3) for a in (queries, keys, values))
        ops.before_rope(queries, keys, values)
        return queries, keys, values

    def attend(self, queries: mx.array, keys: mx.array, values: mx.array, layer_cache, mask,
               commit: bool) -> mx.array:
        """RoPE at the cache's offset, then attention over the cached prefix and these keys: [B, heads, T, D]."""
        offset = 0 if layer_cache is None else layer_cache.offset
        queries, keys = self._rope(queries, offset), self._rope(keys, offset)
        if layer_cache is not None:
            # Denoising steps read the prefix without storing the block: its tokens change every step.
            keys, values = layer_cache.update(keys, values) if commit else layer_cache.extended(keys, values)
        return ops.attention(queries, keys, values, scale=self.scale, mask=mask)


class MLP(nn.Module):
    """SwiGLU: the dense FFN of the first layers, and the shared expert of the MoE layers."""

    def __init__(self, hidden_size: int, intermediate_size: int, bias: bool):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=bias)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=bias)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=bias)

    def __call__(self, x: mx.array) -> mx.array:
        return self.down_proj(ops.swiglu(self.gate_proj(x), self.up_proj(x)))


class SwitchMLP(nn.Module):
    """The routed experts, stacked [experts, out, in]; each token runs only its chosen experts. Gate and up are
    one [experts, 2I, H] weight (gate first; `sanitize` concatenates the checkpoint's two), so a token-expert pair
    costs one gather-matmul for both, as DiffusionGemma's stored layout already has it."""

    def __init__(self, hidden_size: int, intermediate_size: int, num_experts: int):
        super().__init__()
        self.gate_up_proj = SwitchLinear(hidden_size, 2 * intermediate_size, num_experts)
        self.down_proj = SwitchLinear(intermediate_size, hidden_size, num_experts)

    def __call__(self, x: mx.array, indices: mx.array) -> mx.array:
        """x [..., H], indices [..., k] -> [..., k, H]."""
        def run(rows, routed, grouped):
            gate, up = mx.split(self.gate_up_proj(rows, routed, grouped), 2, axis=-1)
            return self.down_proj(ops.swiglu(gate, up), routed, grouped)

        return through_experts(x, indices, run)


class Gate(nn.Module):
    """Sigmoid router with group-limited top-k. Everything is float32 (the checkpoints' router_dtype)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.n_group = config.n_group
        self.topk_group = config.topk_group
        self.routed_scaling_factor = config.routed_scaling_factor
        self.weight = mx.zeros((config.num_experts, config.hidden_size))
        self.expert_bias = mx.zeros((config.num_experts,))

    def __call__(self, x: mx.array) -> tuple[mx.array, mx.array]:
        """Expert indices [..., k] and their weights [..., k] (float32, summing to routed_scaling_factor)."""
        scores = mx.sigmoid(x.astype(mx.float32) @ self.weight.astype(mx.float32).T)
        # The bias only steers which experts are chosen; the weights come from the unbiased scores.
        choice = scores + self.expert_bias.astype(mx.float32)
        if self.n_group > 1 and self.topk_group < self.n_group:
            grouped = choice.reshape(*choice.shape[:-1], self.n_group, -1)
            # A group's score is the sum of its two best experts.
            group_scores = mx.topk(grouped, min(2, grouped.shape[-1]), axis=-1).sum(axis=-1)
            dropped = mx.argpartition(group_scores, self.n_group - self.topk_group - 1, axis=-1)
            dropped = dropped[..., : self.n_group - self.topk_group]
            # -inf, not 0: with the bias, kept experts can score below zero.
            grouped = mx.put_along_axis(grouped, dropped[..., None], mx.array(-mx.inf, mx.float32), axis=-2)
            choice = grouped.reshape(choice.shape)
        # Integer routing decisions carry no gradient (training goes through the weights only).
        indices = mx.stop_gradient(mx.argpartition(-choice, self.top_k - 1, axis=-1)[..., : self.top_k])
        weights = mx.take_along_axis(scores, indices, axis=-1)
        if self.top_k > 1:
            # The reference always normalises with k > 1 (whatever norm_topk_prob says).
            weights = weights / (weights.sum(axis=-1, keepdims=True) + 1e-20)
        return indices, weights * self.routed_scaling_factor


class SparseMoeBlock(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.gate = Gate(config)
        self.switch_mlp = SwitchMLP(config.hidden_size, config.moe_intermediate_size, config.num_experts)
        self.shared_experts = (
            MLP(config.hidden_size, config.moe_intermediate_size * config.num_shared_experts, config.use_bias)
            if config.num_shared_experts
            else None
        )

    def __call__(self, x: mx.array) -> mx.array:
        indices, weights = self.gate(x)
        experts = self.switch_mlp
        routed = ops.routed_experts(x, indices, weights, experts.gate_up_proj, experts.down_proj,
                                    "swiglu", mlx=lambda: (experts(x, indices) * weights[..., None]).sum(axis=-2))
        routed = routed.astype(x.dtype)
        if self.shared_experts is not None:
            routed = routed + self.shared_experts(x)
        return routed


class DecoderLayer(nn.Module):
    def __init__(self, config: ModelConfig, index: int):
        super().__init__()
        self.attention = Attention(config)
        dense = not config.has_moe or index < config.first_k_dense_replace
        self.mlp = (
            MLP(config.hidden_size, config.intermediate_size, config.use_bias) if dense else SparseMoeBlock(config)
        )
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)

    def __call__(self, x: mx.array, layer_cache, mask, commit: bool) -> mx.array:
        h = x + self.attention(self.input_layernorm(x), layer_cache, mask, commit)
        return h + self.mlp(self.post_attention_layernorm(h))


class LLaDA2MoeModel(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = [DecoderLayer(config, i) for i in range(config.num_hidden_layers)]
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)

    def __call__(self, input_ids: mx.array, cache=None, mask=None, commit: bool = False) -> mx.array:
        """Final-norm hidden states. With a cache, positions continue at its offset and the input attends to
        the whole cached prefix; `commit` appends the input's keys/values to it."""
        h = self.word_embeddings(input_ids)
        for i, layer in enumerate(self.layers):
            h = layer(h, None if cache is None else cache[i], mask, commit)
        return self.norm(h)


class LanguageModel(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.tie_word_embeddings = config.tie_word_embeddings
        self.model = LLaDA2MoeModel(config)
        if not config.tie_word_embeddings:
            self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def __call__(self, input_ids: mx.array, cache=None, mask=None) -> mx.array:
        """float32 logits [batch, length, vocab]; never writes the cache."""
        h = self.model(input_ids, cache, mask)
        head = self.model.word_embeddings.as_linear if self.tie_word_embeddings else self.lm_head
        return head(h).astype(mx.float32)


class BlockCache(PrefixCache):
    """A prefix cache that remembers the block length it was built with: under block-causal attention the
    cached keys depend on it, so a cache is reusable only with the same block length."""

    def __init__(self, num_layers: int, block_length: int):
        super().__init__(num_layers)
        self.block_length = block_length


def block_causal_mask(start: int, length: int, block_length: int) -> mx.array:
    """bool [length, start + length]: query at absolute position i may see key j iff block(j) <= block(i)."""
    query_blocks = mx.arange(start, start + length) // block_length
    key_blocks = mx.arange(start + length) // block_length
    return key_blocks[None, :] <= query_blocks[:, None]


class Network(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.language_model = LanguageModel(config)

    @property
    def vocab_size(self) -> int:
        return self.config.vocab_size

    @property
    def context_length(self) -> int:
        """Positions the model was trained to attend to (config.json max_position_embeddings)."""
        return self.config.max_position_embeddings

    @property
    def mask_token_id(self) -> int:
        return self.config.mask_token_id

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        return self.config.eos_token_ids

    def make_cache(self, block_length: int = DEFAULT_BLOCK_LENGTH) -> BlockCache:
        return BlockCache(self.config.num_hidden_layers, block_length)

    def prefill(self, input_ids: mx.array, cache: PrefixCache | None = None,
                block_length: int = DEFAULT_BLOCK_LENGTH, cancel=None, progress=None) -> PrefixCache:
        """Encode the whole blocks of a prompt block-causally and append them to the cache.

        A prompt that ends inside a block writes only its whole blocks: the rest belongs to the first block
        that is denoised (it is fed to `denoise` with the masks), as in the official generate(). Long prompts
        go in passes of whole blocks (engine.models.chunking), so the mask is [chunk, keys]; `cancel` is
        checked before each pass and raises `Cancelled`, leaving a partly written cache; `progress(done, total)`
        is called after each pass but the last."""
        if cache is None:
            cache = self.make_cache(block_length)
        if isinstance(cache, BlockCache) and cache.block_length != block_length:
            raise ValueError(f"cache was built with block length {cache.block_length}, not {block_length}")
        if cache.offset % block_length:
            raise ValueError(f"prefill continues a cache of whole {block_length}-token blocks only")
        length = input_ids.shape[1] - input_ids.shape[1] % block_length
        begin = 0
        while begin < length:
            if cancel is not None and cancel.is_set():
                raise Cancelled()
            size = chunking.chunk_tokens(self.config.num_attention_heads, cache.offset + chunking.MAX_CHUNK,
                                         multiple=block_length)
            ids = input_ids[:, begin : min(begin + size, length)]
            mask = None if ids.shape[1] == block_length else block_causal_mask(cache.offset, ids.shape[1], block_length)
            self.language_model.model(ids, cache, mask, commit=True)
            mx.eval(cache.arrays())
            begin += ids.shape[1]
            if progress is not None and begin < length:
                progress(begin, length)
        return cache

    def denoise(self, block_ids: mx.array, cache: PrefixCache) -> mx.array:
        """float32 logits [1, block, vocab] of the active block against the cached prefix (cache unchanged)."""
        return self.language_model(block_ids, cache)

    def denoise_many(self, calls) -> list[mx.array]:
        """Several requests' `denoise` in one forward (engine.models.llada2_batched)."""
        from .llada2_batched import denoise_many

        return denoise_many(self, calls)

    def commit(self, block_ids: mx.array, cache: PrefixCache) -> None:
        """Append a finished block's keys/values (recomputed: its tokens changed after the last step)."""
        self.language_model.model(block_ids, cache, commit=True)
        mx.eval(cache.arrays())

    def sanitize(self, weights: dict[str, mx.array]) -> dict[str, mx.array]:
        """HF, mlx-vlm and mlx-community tensor names -> this module's names. Idempotent."""
        out = {}
        for name, value in weights.items():
            if "rotary_emb.inv_freq" in name:
                continue  # a non-persistent buffer some conversions saved anyway
            if name.startswith(("model.", "lm_head.")):
                name = "language_model." + name
            # some MLX conversions (an mlx-lm fork) renamed the embedding
            out[name.replace(".embed_tokens.", ".word_embeddings.")] = value
        config = self.config
        if config.has_moe:
            for i in range(config.first_k_dense_replace, config.num_hidden_layers):
                prefix = f"language_model.model.layers.{i}.mlp"
                for proj in ("gate_proj", "up_proj", "down_proj"):
                    for suffix in ("weight", "scales", "biases"):
                        if f"{prefix}.experts.0.{proj}.{suffix}" in out:
                            out[f"{prefix}.switch_mlp.{proj}.{suffix}"] = mx.stack(
                                [_pop(out, f"{prefix}.experts.{e}.{proj}.{suffix}") for e in range(config.num_experts)]
                            )
                _fuse_gate_up(out, f"{prefix}.switch_mlp")
        if config.tie_word_embeddings:
            for suffix in ("weight", "scales", "biases"):
                out.pop(f"language_model.lm_head.{suffix}", None)
        return out


def make_processor(path, config: ModelConfig, tokenizer=None) -> None:
    """LLaDA-2 reads text only: no image processor (engine.models.families.NetworkModule)."""
    return None


def _fuse_gate_up(weights: dict[str, mx.array], prefix: str) -> None:
    """`prefix.gate_proj.*` and `prefix.up_proj.*` [E, I, ...] -> `prefix.gate_up_proj.*` [E, 2I, ...]. Affine
    quantization groups run along the input axis, so weight, scales and biases concatenate alike, exactly."""
    for suffix in ("weight", "scales", "biases"):
        gate, up = f"{prefix}.gate_proj.{suffix}", f"{prefix}.up_proj.{suffix}"
        if gate in weights or up in weights:
            weights[f"{prefix}.gate_up_proj.{suffix}"] = mx.concatenate([_pop(weights, gate), _pop(weights, up)],
                                                                         axis=1)


def _pop(weights: dict[str, mx.array], name: str) -> mx.array:
    if name not in weights:
        raise CheckpointError(f"checkpoint lacks tensor {name}")
    return weights.pop(name)
