"""The DiffusionGemma network: one parameter tree run as encoder (prefill, commit) and decoder (denoise)."""

from __future__ import annotations

import math
import re
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from ...errors import CheckpointError, InputError
from ...images.processor import ImageProcessor
from .. import chunking
from ..cache import PrefixCache
from ..chunking import Cancelled
from ..gemma4_vision import VISION_PREFIXES, VisionConfig, keep_vision_weight
from .config import FULL, SLIDING, ModelConfig
from .masks import chunk_end, encoder_mask, media_run_ids, run_block, sliding_key_start
from .modules import Backbone, DecoderLayer

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
        self.context_length = text.max_position_embeddings   # positions the model was trained to attend to
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
                token_type_ids: mx.array | None = None, cancel=None, progress=None) -> PrefixCache:
        """Encode a prompt (or the new part of one) into the prefix cache and return the cache.

        `pixel_values`: one [3, H, W] array per image whose soft tokens are in `input_ids`, in prompt
        order (images already in the cache are not passed again). `token_type_ids` [1, T] marks the soft
        tokens with 1; each image's run of soft tokens attends bidirectionally within itself.
        A long prompt is encoded in passes (engine.models.chunking); `cancel` (anything with `is_set()`) is
        checked before each pass and raises `Cancelled`, leaving a partly written cache; `progress(done, total)`
        is called after each pass but the last."""
        cache = self.make_cache() if cache is None else cache
        # The public entry of a request's ids: checked here once, never again per step.
        input_ids = _checked_ids(input_ids, self.vocab_size)
        if token_type_ids is not None:
            token_type_ids = mx.array(token_type_ids).reshape(-1)
            if token_type_ids.size != input_ids.size:
                raise InputError(f"token_type_ids has {token_type_ids.size} entries for {input_ids.size} tokens")
        run_ids = None
        if token_type_ids is not None and self.config.text_config.use_bidirectional_attention == "vision":
            run_ids = media_run_ids(np.array(token_type_ids))
        embed = self._prompt_embedder(input_ids, pixel_values, token_type_ids)
        self._encode(embed, input_ids.shape[1], cache, run_ids, cancel, progress)
        return cache

    def prompt_embeddings(self, input_ids: mx.array, pixel_values=None, token_type_ids: mx.array | None = None) -> mx.array:
        """Encoder input [1, T, H]: scaled token embeddings (placeholders as pad), with the image features,
        unscaled, in place of the image soft tokens (token type 1, or the image token id without types)."""
        input_ids = _as_batch_row(input_ids)
        return self._prompt_embedder(input_ids, pixel_values, token_type_ids)(0, input_ids.shape[1])

    def _prompt_embedder(self, input_ids: mx.array, pixel_values, token_type_ids):
        """`embed(begin, end)`: `prompt_embeddings` of the prompt's tokens [begin, end), so an encoder pass
        embeds only its own chunk (the image features are computed once, on the first pass that needs them)."""
        if pixel_values is None:
            return lambda begin, end: self._embed_prompt(input_ids[:, begin:end])
        if token_type_ids is not None:
            slots = mx.array(token_type_ids).reshape(-1) == 1
        else:
            slots = input_ids[0] == (-1 if self.config.image_token_id is None else self.config.image_token_id)
        features = self.image_features(pixel_values)
        wanted = int(slots.sum().item())
        if features.shape[0] != wanted:
            raise InputError(f"the prompt has {wanted} image tokens but the images give {features.shape[0]}")
        # The i-th image slot takes the i-th feature row (features are concatenated in prompt order).
        rows = mx.maximum(mx.cumsum(slots.astype(mx.int32)) - 1, 0)

        def embed(begin: int, end: int) -> mx.array:
            h = self._embed_prompt(input_ids[:, begin:end])
            return mx.where(slots[begin:end][None, :, None], features.astype(h.dtype)[rows[begin:end]][None], h)

        return embed

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
        ids = _as_batch_row(canvas_ids)
        self._encode(lambda begin, end: self._embed(ids[:, begin:end]), ids.shape[1], cache)
        return cache

    def _embed_prompt(self, input_ids: mx.array) -> mx.array:
        # Media placeholders are embedded as pad (the vision features overwrite them).
        for media_id in (self.config.image_token_id, self.config.video_token_id):
            if media_id is not None:
                input_ids = mx.where(input_ids == media_id, self.config.text_config.pad_token_id, input_ids)
        return self._embed(input_ids)

    def _encode(self, embed, length: int, cache: PrefixCache, run_ids: np.ndarray | None = None,
                cancel=None, progress=None) -> None:
        """Encode `length` new tokens into the cache in passes: each pass embeds its chunk, runs every layer
        against the cache written so far and stores its keys/values, so masks are [chunk, keys] and sliding
        layers read only their window (never [T, T]). Equal to one pass up to float rounding."""
        begin = 0
        heads = self.config.text_config.num_attention_heads
        while begin < length:
            if cancel is not None and cancel.is_set():
                raise Cancelled()
            size = chunking.chunk_tokens(heads, cache.offset + chunking.MAX_CHUNK)
            end = chunk_end(begin, length, size, run_ids)
            self._encode_pass(embed(begin, end), cache, run_block(None if run_ids is None else run_ids[begin:end]))
            begin = end
            if progress is not None and begin < length:
                progress(begin, length)

    def _encode_pass(self, h: mx.array, cache: PrefixCache, media_runs: mx.array | None) -> None:
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

    def denoise(self, canvas_ids: mx.array, cache: PrefixCache, self_conditioning: mx.array | None = None,
                softcap: bool = True) -> mx.array:
        """float32 softcapped logits [1, L, V] for a canvas; reads the cache, never writes it.

        `self_conditioning` is the previous step's `self_conditioning_signal(...)` or
        `self_conditioning_from_probabilities(...)` (None on a canvas's first step). Processed logits [.., V]
        are accepted too, for either kind of embedding. `softcap=False` leaves the final softcap to the caller
        (the sampler fuses it into its one pass over the logits)."""
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
        return mx.tanh(logits / cap) * cap if cap and softcap else logits

    def denoise_many(self, calls) -> list[mx.array]:
        """Several requests' `denoise` in one forward (engine.models.diffusion_gemma.batched)."""
        from .batched import denoise_many

        return denoise_many(self, calls)

    @property
    def softcap(self) -> float | None:
        return self.config.text_config.final_logit_softcapping

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
        return self.self_conditioning_from_probabilities(mx.softmax(logits.astype(mx.float32), axis=-1, precise=True))

    def self_conditioning_from_probabilities(self, probs) -> mx.array:
        """The next `denoise`'s `self_conditioning` from softmax(processed) [L, V] (MLX or NumPy): the soft
        embedding probs @ E * sqrt(H), for either kind of embedding."""
        embed = self.model.decoder.embed_tokens
        probs = mx.array(probs) if not isinstance(probs, mx.array) else probs
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
    """The image processor (engine.images.processor) when the checkpoint has a vision tower, else None.

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
