"""LLaDA-2 block generation (masked diffusion, block by block, with a prefix KV cache).

Defaults follow the official LLaDA2.0 `generate()`: the prompt followed by `<|mask|>` ids, padded to whole
blocks counted from position 0; per block up to `steps` denoising forwards; each step commits the masked
positions whose confidence clears the threshold, or — when fewer than the step's quota n[s] do — the quota's
most confident ones (n = block/steps, the remainder spread over the first steps, so a block always fills up
within `steps`); committed tokens are final; generation stops after a block that contains EOS and the output is
cut just after the first EOS.

Deliberate differences from the official code, none of which changes a trajectory:
* execution with a prefix KV cache (one block forward per step plus one commit forward per block) instead of
  recomputing the whole window, as mlx-vlm does — mathematically the same block-causal attention;
* `steps` is clamped to the block length: every one of the first block-length steps commits at least one
  position, so a block is full before any further step could run;
* temperature 0 is greedy even when top-k / top-p are set (the official code then samples at T = 1);
* an optional linear threshold schedule (`diffusion_threshold` -> `diffusion_threshold_end` over a block's
  steps, as mlx-vlm offers); constant by default.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Iterator

import mlx.core as mx
import numpy as np

from ..errors import InputError
from ..events import BlockCommitted, Started, Step
from ..models.llada2_moe import DEFAULT_BLOCK_LENGTH, BlockCache
from ..randomness import SeededRandomness
from ..settings import Settings
from ..text import TextAssembler
from .common import Clock, cancelled_block, closing_events, emit_block, first_set, is_cancelled, stop_ids

FAMILY = "llada2_moe"
DEFAULT_STEPS = 32
DEFAULT_THRESHOLD = 0.95


@dataclass(frozen=True)
class LLaDA2Settings:
    """Concrete numbers for one generation, after defaults are applied."""

    max_tokens: int
    block_length: int
    steps: int                  # denoising forwards per block at most
    threshold: float            # at the first step of a block
    threshold_end: float        # at the last step of a block
    temp: float
    top_k: int | None
    top_p: float | None
    seed: int


def resolve_settings(settings: Settings, generation_config: dict) -> LLaDA2Settings:
    """None -> the official defaults: block 32, steps 32, threshold 0.95, greedy; max_tokens from the
    checkpoint's generation_config (max_new_tokens), else 256."""
    block_length = int(first_set(settings.block_length, DEFAULT_BLOCK_LENGTH))
    max_tokens = int(first_set(settings.max_tokens, (generation_config or {}).get("max_new_tokens"), 256))
    # The official loop caps steps at gen_length (its quota then commits several tokens per step). Steps beyond
    # the block length would never run (the first block-length steps commit at least one position each), so
    # they are clamped too, and Step.max_steps shows the real bound.
    steps = min(int(first_set(settings.max_denoising_steps, DEFAULT_STEPS)), block_length, max_tokens)
    threshold = float(first_set(settings.diffusion_threshold, DEFAULT_THRESHOLD))
    return LLaDA2Settings(
        max_tokens=max_tokens,
        block_length=block_length,
        steps=steps,
        threshold=threshold,
        threshold_end=float(first_set(settings.diffusion_threshold_end, threshold)),
        temp=float(first_set(settings.temp, 0.0)),
        top_k=settings.top_k or None,
        top_p=settings.top_p if settings.top_p is not None and settings.top_p < 1.0 else None,
        seed=int(first_set(settings.seed, 0)),
    )


# ---- sampler maths (pure functions; tested against the reference's recorded values) ---------------------------

def transfer_schedule(block_length: int, steps: int) -> list[int]:
    """n[s]: the fewest positions step s commits. block/steps each, the remainder one each on the first steps."""
    base, remainder = divmod(block_length, steps)
    return [base + (1 if s < remainder else 0) for s in range(steps)]


def threshold_schedule(start: float, end: float, steps: int) -> list[float]:
    """Linear from `start` at the first step of a block to `end` at its last."""
    return [start - (start - end) * s / max(1, steps - 1) for s in range(steps)]


def top_k_filter(logits: mx.array, k: int | None) -> mx.array:
    """Logits below the k-th largest become -inf (ties with it are kept)."""
    if not k or k >= logits.shape[-1]:
        return logits
    kth = mx.min(mx.topk(logits, k, axis=-1), axis=-1, keepdims=True)
    return mx.where(logits < kth, -mx.inf, logits)


def top_p_filter(logits: mx.array, p: float | None) -> mx.array:
    """Nucleus filter: keep the most likely tokens up to and including the one whose cumulative probability
    first exceeds p (the top token always stays); the rest become -inf."""
    if p is None or p >= 1.0:
        return logits
    order = mx.argsort(-logits, axis=-1)
    ranked = mx.take_along_axis(logits, order, axis=-1)
    cumulative = mx.cumsum(mx.softmax(ranked, axis=-1), axis=-1)
    # A token is dropped when the tokens ranked before it already exceed p.
    drop_ranked = mx.concatenate([mx.zeros_like(cumulative[..., :1]), cumulative[..., :-1]], axis=-1) > p
    drop = mx.take_along_axis(drop_ranked, mx.argsort(order, axis=-1), axis=-1)
    return mx.where(drop, -mx.inf, logits)


def propose(logits: mx.array, s: LLaDA2Settings, randomness, block: int, step: int) -> tuple[mx.array, mx.array]:
    """Candidate token x0 for every position of the block ([B, V] logits -> [B]) and its probability under the
    distribution it was chosen from (the confidence)."""
    if s.temp == 0:
        x0 = mx.argmax(logits, axis=-1)
    else:
        logits = top_p_filter(top_k_filter(logits / s.temp, s.top_k), s.top_p)
        x0 = randomness.categorical(logits, block=block, step=step).reshape(logits.shape[:-1])
    x0 = x0.astype(mx.int32)
    probability = mx.take_along_axis(mx.softmax(logits, axis=-1), x0[..., None], axis=-1)[..., 0]
    return x0, probability


def select_transfer(confidence: np.ndarray, quota: int, threshold: float) -> np.ndarray:
    """Positions to commit this step. `confidence` is -inf where nothing can be committed (not masked).

    Everything strictly above the threshold when that reaches the quota; otherwise the `quota` most confident
    positions (fewer if fewer are masked), ties to the lowest index."""
    high = confidence > threshold
    if high.sum() >= quota:
        return high
    count = min(quota, int(np.isfinite(confidence).sum()))
    chosen = np.argsort(-confidence, kind="stable")[:count]
    transfer = np.zeros(confidence.shape, dtype=bool)
    transfer[chosen] = True
    return transfer


# ---- the loop -------------------------------------------------------------------------------------------------

def generate(model, *, prompt_ids, settings: Settings, randomness=None, cancel=None, session=None,
             pixel_values=None, token_type_ids=None) -> Iterator:
    """Check the request now (bad input raises here, before any event), then return the event stream.

    `token_type_ids` comes with `pixel_values` only; both are refused."""
    if pixel_values is not None:
        raise InputError("LLaDA-2 reads text only; it cannot take images")
    network = model.network
    s = resolve_settings(settings, model.generation_config)
    vocab = network.vocab_size
    if any(not 0 <= t < vocab for t in prompt_ids):
        raise InputError(f"prompt ids must be in [0, {vocab})")
    rng = randomness if randomness is not None else SeededRandomness(s.seed, vocab)
    stops = stop_ids(network.eos_token_ids, model.generation_config.get("eos_token_id"),
                     model.tokenizer.eos_ids if model.tokenizer is not None else None)
    return _generate(model, list(prompt_ids), s, rng, stops, cancel, session)


def _prefill(network, prompt_ids: list[int], block_length: int, session):
    """Cache the prompt's whole blocks, reusing the session's cache for the common prefix.

    Returns (cache, ids the cache holds, prompt tokens not served from the session)."""
    whole = len(prompt_ids) - len(prompt_ids) % block_length
    kept = 0
    cache = session.cache if session is not None else None
    # Under block-causal attention the cached keys depend on the block length they were computed with.
    if isinstance(cache, BlockCache) and cache.block_length == block_length:
        kept = session.reusable_prefix(prompt_ids, FAMILY, align=block_length)
    if kept:
        cache.trim(kept)
    else:
        cache = network.make_cache(block_length)
    if whole > kept:
        with session.writing_cache() if session is not None else nullcontext():
            network.prefill(mx.array([prompt_ids[kept:whole]], dtype=mx.int32), cache, block_length)
    return cache, prompt_ids[:whole], len(prompt_ids) - kept


def _generate(model, prompt_ids: list[int], s: LLaDA2Settings, rng, stops, cancel, session) -> Iterator:
    network = model.network
    text = TextAssembler(model.tokenizer)
    clock = Clock()
    cache, cached_ids, encoded = _prefill(network, prompt_ids, s.block_length, session)
    if session is not None:
        session.remember(cache, cached_ids, FAMILY)
    clock.prefill_s = time.perf_counter() - clock.start
    yield Started(prompt_tokens=len(prompt_ids), encoded_tokens=encoded, prefill_s=clock.prefill_s,
                  block_length=s.block_length)

    emitted: list[int] = []
    steps_per_block: list[int] = []
    finish_reason = None
    block = 0
    while finish_reason is None:
        start = len(cached_ids)
        prompt_tail = prompt_ids[start:]
        began = time.perf_counter()
        committed, steps, stop_reason = yield from _denoise_block(network, cache, rng, s, block, prompt_tail, cancel)
        clock.denoise_s += time.perf_counter() - began
        steps_per_block.append(steps)
        if stop_reason == "cancelled":
            finish_reason = "cancelled"
            yield cancelled_block(block, steps)
            break
        tokens, finish_reason = emit_block(committed[len(prompt_tail):], stops, s.max_tokens - len(emitted),
                                           include_stop=True)
        emitted += tokens
        content_delta, reasoning_delta = text.feed(tokens)
        yield BlockCommitted(block=block, token_ids=tuple(tokens), committed=tuple(committed),
                             content_delta=content_delta, reasoning_delta=reasoning_delta, steps=steps,
                             stop_reason=stop_reason)
        # The last block is cached only for the next turn of a conversation.
        if finish_reason is None or session is not None:
            network.commit_block(mx.array([committed], dtype=mx.int32), cache)
            cached_ids += committed
        block += 1

    if session is not None:
        session.remember(cache, cached_ids, FAMILY)
    yield from closing_events(text, finish_reason, emitted, clock, steps_per_block,
                              [s.block_length] * len(steps_per_block), len(prompt_ids))


def _denoise_block(network, cache, rng, s: LLaDA2Settings, block: int, prompt_tail: list[int], cancel):
    """Unmask one block; yields Step events; returns (block ids, steps run, stop reason)."""
    length = s.block_length
    prompt_positions = len(prompt_tail)
    ids = np.full(length, network.mask_token_id, dtype=np.int32)
    ids[:prompt_positions] = prompt_tail
    masked = np.arange(length) >= prompt_positions
    # What a position scored when it was committed (prompt positions count as certain).
    committed_scores = np.ones(length, dtype=np.float32)
    quotas = transfer_schedule(length, s.steps)
    thresholds = threshold_schedule(s.threshold, s.threshold_end, s.steps)
    # Each step commits at least min(quota, masks left) and the quotas add up to the block length, so the block
    # fills up within s.steps forwards and is never committed with a mask left in it.
    step = 0
    while masked.any():
        if is_cancelled(cancel):
            return [], step, "cancelled"
        logits = network.block_logits(mx.array(ids[None]), cache)[0]
        x0, probability = propose(logits, s, rng, block, step)
        mx.eval(x0, probability)
        x0_np, probability_np = np.array(x0), np.array(probability, dtype=np.float32)
        confidence = np.where(masked, probability_np, -np.inf)
        transfer = select_transfer(confidence, quotas[step], thresholds[step])
        scores = np.where(masked, probability_np, committed_scores)
        ids = np.where(transfer, x0_np, ids).astype(np.int32)
        committed_scores = np.where(transfer, probability_np, committed_scores)
        masked &= ~transfer
        yield Step(
            block=block, step=step, max_steps=s.steps,
            canvas=ids.copy(), candidates=x0_np, accepted=~masked, newly_accepted=int(transfer.sum()),
            scores=scores, score_kind="confidence", temperature=s.temp, noise_is_mask=True,
            prompt_positions=prompt_positions,
        )
        step += 1
    return [int(t) for t in ids], step, "all_positions_revealed"


def checkpoint_defaults(model) -> dict:
    """What each setting left unset means for this checkpoint (for a settings panel)."""
    s = resolve_settings(Settings(), model.generation_config)
    return {
        "max_tokens": s.max_tokens, "block_length": s.block_length, "max_denoising_steps": s.steps,
        "diffusion_threshold": s.threshold, "diffusion_threshold_end": s.threshold_end, "temp": s.temp,
        "top_k": s.top_k, "top_p": s.top_p, "seed": s.seed,
    }
