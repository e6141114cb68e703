"""DiffusionGemma block generation (uniform-state discrete diffusion with self-conditioning).

Defaults follow the official (Hugging Face) algorithm of the checkpoint's generation_config: entropy-bound
acceptance, linear temperature schedule t_max -> t_min, proposals sampled from the processed logits, every
non-accepted position renoised, stable-and-confident early stop, block = argmax of the last step.

Deliberate differences, all opt-in or documented in the README:
* canvas length: `min(max_canvas, max(remaining, min_canvas))` (min 64) like mlx-vlm, unless
  `diffusion_full_canvas` (always the checkpoint canvas, as the official code does);
* output stops before the first EOS and at `max_tokens` (the official code returns whole padded canvases);
* the confidence-threshold sampler commits what it confirmed (mlx-vlm commits the last argmax instead), so the
  last frame a person sees is the committed text;
* no renoise / proposal draw at a step that ends the block (it cannot change the output).
"""

from __future__ import annotations

import hashlib
import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Iterator

import mlx.core as mx
import numpy as np

from ..errors import InputError
from ..images import image_runs
from ..events import BlockCommitted, Started, Step
from ..randomness import SeededRandomness
from ..settings import Settings, check_temperature_schedule
from ..text import TextAssembler
from .common import Clock, cancelled_block, closing_events, emit_block, first_set, is_cancelled, stop_ids

FAMILY = "diffusion_gemma"


@dataclass(frozen=True)
class DiffusionSettings:
    """Concrete numbers for one generation, after checkpoint defaults are applied."""

    max_tokens: int
    steps: int
    sampler: str
    entropy_bound: float
    threshold: float
    t_min: float
    t_max: float
    stability_threshold: int
    confidence_threshold: float
    temp: float
    canvas_length: int          # the checkpoint's canvas
    min_canvas: int
    max_canvas: int
    full_canvas: bool
    seed: int

    def block_length(self, remaining: int) -> int:
        if self.full_canvas:
            return self.canvas_length
        return min(self.max_canvas, max(remaining, self.min_canvas))


def resolve_settings(settings: Settings, generation_config: dict, canvas_length: int) -> DiffusionSettings:
    """Settings left as None take the checkpoint's generation_config (any of its known spellings), then the
    reference defaults (48 steps, bound 0.1, t 0.4..0.8, stability 1, confidence 0.005, 256 tokens)."""
    g = generation_config or {}
    sampler_cfg = g.get("sampler_config") or {}
    schedule = g.get("linear_temperature_schedule_config") or g.get("temperature_schedule") or {}
    stopping = g.get("diffusion_stopping_config") or g.get("stopping_config") or {}
    max_canvas = min(canvas_length, settings.diffusion_max_canvas_length or canvas_length)
    resolved = DiffusionSettings(
        max_tokens=int(first_set(settings.max_tokens, g.get("max_new_tokens"), 256)),
        steps=int(first_set(settings.max_denoising_steps, g.get("max_denoising_steps"), 48)),
        sampler=settings.diffusion_sampler or "entropy-bound",
        entropy_bound=float(first_set(settings.entropy_bound, sampler_cfg.get("entropy_bound"), 0.1)),
        threshold=float(first_set(settings.diffusion_threshold, 0.9)),
        t_min=float(first_set(settings.t_min, g.get("t_min"), schedule.get("t_min"), 0.4)),
        t_max=float(first_set(settings.t_max, g.get("t_max"), schedule.get("t_max"), 0.8)),
        stability_threshold=int(first_set(settings.stability_threshold, g.get("stability_threshold"),
                                       stopping.get("stability_threshold"), 1)),
        confidence_threshold=float(first_set(settings.confidence_threshold, g.get("confidence_threshold"),
                                          stopping.get("confidence_threshold"), 0.005)),
        temp=float(first_set(settings.temp, 1.0)),
        canvas_length=canvas_length,
        min_canvas=min(max_canvas, settings.diffusion_min_canvas_length or 64),
        max_canvas=max_canvas,
        full_canvas=bool(settings.diffusion_full_canvas),
        seed=int(first_set(settings.seed, 0)),
    )
    check_temperature_schedule(resolved.t_min, resolved.t_max)
    return resolved


# ---- sampler maths (pure functions over MLX arrays; tested against the reference unit fixtures) -------------

def linear_temperature(cur_step: int, steps: int, t_min: float, t_max: float) -> np.float32:
    """t = t_min + (t_max - t_min) * cur_step / N, in float32 like the reference's tensor arithmetic."""
    f = np.float32
    return f(t_min) + f(t_max - t_min) * f(cur_step) / f(steps)


def token_entropy(processed: mx.array) -> mx.array:
    """Per-position entropy (nats) of softmax(processed), float32."""
    logp = processed - mx.logsumexp(processed, axis=-1, keepdims=True)
    return -mx.sum(mx.exp(logp) * logp, axis=-1)


def token_probability(processed: mx.array, ids: mx.array) -> mx.array:
    """softmax(processed)[ids] per position."""
    logp = processed - mx.logsumexp(processed, axis=-1, keepdims=True)
    return mx.exp(mx.take_along_axis(logp, ids[..., None], axis=-1)[..., 0])


def entropy_bound_mask(entropy: mx.array, bound: float) -> mx.array:
    """Accept the lowest-entropy positions while the entropies sorted before them sum to <= bound.

    The lowest-entropy position is always accepted (empty sum). Works on the last axis."""
    order = mx.argsort(entropy, axis=-1)
    ranked = mx.take_along_axis(entropy, order, axis=-1)
    accepted_ranked = (mx.cumsum(ranked, axis=-1) - ranked) <= bound
    inverse = mx.argsort(order, axis=-1)
    return mx.take_along_axis(accepted_ranked, inverse, axis=-1)


def confidence_transfer_mask(confidence: mx.array, unrevealed: mx.array, threshold: float,
                             force_all: bool = False) -> mx.array:
    """Unrevealed positions with confidence >= threshold; if none, the single most confident unrevealed one."""
    if force_all:
        return unrevealed
    transfer = unrevealed & (confidence >= threshold)
    masked = mx.where(unrevealed, confidence, -mx.inf)
    best = mx.argmax(masked, axis=-1, keepdims=True)
    positions = mx.arange(confidence.shape[-1])
    fallback = (positions == best) & unrevealed
    need_fallback = (~mx.any(transfer, axis=-1, keepdims=True)) & mx.any(unrevealed, axis=-1, keepdims=True)
    return mx.where(need_fallback, fallback, transfer)


class StabilityTracker:
    """'Stable': the argmax equals each of the previous `stability_threshold` argmax canvases (0 = always)."""

    def __init__(self, stability_threshold: int):
        self.needed = stability_threshold
        self.history: list[np.ndarray] = []

    def update(self, argmax: np.ndarray) -> bool:
        if self.needed == 0:
            stable = True
        else:
            stable = len(self.history) >= self.needed and all(np.array_equal(h, argmax) for h in self.history[-self.needed:])
        self.history = (self.history + [argmax])[-max(self.needed, 1):]
        return stable


# ---- the loop -------------------------------------------------------------------------------------------------

def _prefill(network, prompt_ids, session, pixel_values, token_type_ids):
    """Encode the prompt, reusing the session's cache for the common prefix.

    Returns (cache, tokens encoded, the prompt's image runs)."""
    images = []
    if pixel_values:
        runs = image_runs(token_type_ids)
        images = [(start, end, hashlib.sha1(np.asarray(pixels).tobytes()).hexdigest())
                  for (start, end), pixels in zip(runs, pixel_values)]
    kept = session.reusable_prefix(prompt_ids, FAMILY, images=images) if session is not None else 0
    cache = None
    if kept:
        cache = session.cache
        cache.trim(kept)
    new_ids = mx.array([prompt_ids[kept:]], dtype=mx.int32)
    kwargs = {}
    # Only images whose token runs lie in the part still to encode go through the vision tower.
    new_pixels = [pixels for pixels, (start, _, _) in zip(pixel_values or [], images) if start >= kept]
    if new_pixels:
        kwargs = {"pixel_values": new_pixels, "token_type_ids": mx.array([token_type_ids[kept:]], dtype=mx.int32)}
    with session.writing_cache() if session is not None else nullcontext():
        cache = network.prefill(new_ids, cache, **kwargs)
    return cache, len(prompt_ids) - kept, images


def generate(model, *, prompt_ids, settings: Settings, randomness=None, cancel=None, session=None,
             pixel_values=None, token_type_ids=None) -> Iterator:
    """Check the request now (bad input raises here, before any event), then return the event stream."""
    network = model.network
    s = resolve_settings(settings, model.generation_config, network.canvas_length)
    if pixel_values is not None and not model.supports_images:
        raise InputError("this checkpoint has no vision tower; it cannot take images")
    vocab = network.vocab_size
    if any(not 0 <= t < vocab for t in prompt_ids):
        raise InputError(f"prompt ids must be in [0, {vocab})")
    rng = randomness if randomness is not None else SeededRandomness(s.seed, vocab)
    stops = stop_ids(model.config.eos_token_ids, model.generation_config.get("eos_token_id"),
                     model.tokenizer.eos_ids if model.tokenizer is not None else None)
    return _generate(model, list(prompt_ids), s, rng, stops, cancel, session, pixel_values, token_type_ids)


def _generate(model, prompt_ids, s: DiffusionSettings, rng, stops, cancel, session, pixel_values,
              token_type_ids) -> Iterator:
    network = model.network
    text = TextAssembler(model.tokenizer)
    clock = Clock()

    cache, encoded, images = _prefill(network, prompt_ids, session, pixel_values, token_type_ids)
    if session is not None:
        session.remember(cache, prompt_ids, FAMILY, images)
    clock.prefill_s = time.perf_counter() - clock.start
    encoded_ids = list(prompt_ids)
    yield Started(prompt_tokens=len(prompt_ids), encoded_tokens=encoded, prefill_s=clock.prefill_s,
                  block_length=s.block_length(s.max_tokens))

    emitted: list[int] = []
    steps_per_block: list[int] = []
    lengths: list[int] = []
    finish_reason = None
    block = 0
    while finish_reason is None:
        length = s.block_length(s.max_tokens - len(emitted))
        began = time.perf_counter()
        outcome = yield from _denoise_block(network, cache, rng, s, block, length, cancel)
        clock.denoise_s += time.perf_counter() - began
        committed, steps, stop_reason = outcome
        steps_per_block.append(steps)
        lengths.append(length)
        if stop_reason == "cancelled":
            finish_reason = "cancelled"
            yield cancelled_block(block, steps)
            break
        tokens, finish_reason = emit_block(committed, stops, s.max_tokens - len(emitted))
        emitted += tokens
        content_delta, reasoning_delta = text.feed(tokens)
        yield BlockCommitted(block=block, token_ids=tuple(tokens), committed=tuple(committed),
                             content_delta=content_delta, reasoning_delta=reasoning_delta, steps=steps,
                             stop_reason=stop_reason)
        if finish_reason is None:
            network.commit(mx.array([committed], dtype=mx.int32), cache)
            encoded_ids += committed
            block += 1

    if session is not None:
        tail = emitted[len(encoded_ids) - len(prompt_ids):] if finish_reason != "cancelled" else []
        if tail:  # so the next turn can reuse the whole reply when it re-tokenizes the same way
            network.commit(mx.array([tail], dtype=mx.int32), cache)
            encoded_ids += tail
        session.remember(cache, encoded_ids, FAMILY, images)
    yield from closing_events(text, finish_reason, emitted, clock, steps_per_block, lengths, len(prompt_ids))


def _denoise_block(network, cache, rng, s: DiffusionSettings, block: int, length: int, cancel):
    """Denoise one canvas; yields Step events; returns (committed ids, steps run, stop reason)."""
    canvas = rng.tokens((1, length), block=block, step=-1).astype(mx.int32).reshape(1, length)
    self_conditioning = None
    tracker = StabilityTracker(s.stability_threshold)
    confidence_mode = s.sampler == "confidence-threshold"
    revealed = mx.zeros((1, length), dtype=mx.bool_)
    draft = canvas
    argmax_np = None
    for k in range(s.steps):
        if is_cancelled(cancel):
            return [], k, "cancelled"
        cur_step = s.steps - k
        last = cur_step == 1
        logits = network.denoise(canvas, cache, self_conditioning=self_conditioning)
        temperature = linear_temperature(cur_step, s.steps, s.t_min, s.t_max)
        processed = logits / mx.array(temperature, dtype=mx.float32)
        argmax = mx.argmax(processed, axis=-1).astype(mx.int32)
        entropy = token_entropy(processed)
        mx.eval(argmax, entropy)
        argmax_np = np.array(argmax[0])
        entropy_np = np.array(entropy[0])
        stable = tracker.update(argmax_np)
        confident = float(entropy_np.mean()) < s.confidence_threshold
        stop_reason = "stable_and_confident" if (stable and confident) else None
        if last and stop_reason is None:
            stop_reason = "max_denoising_steps"
        ends = stop_reason is not None

        def proposals():
            if s.temp == 0:
                return argmax
            draws = rng.categorical(processed / s.temp if s.temp != 1 else processed, block=block, step=k)
            return draws.astype(mx.int32).reshape(argmax.shape)

        if confidence_mode:
            proposal = proposals()
            confidence = token_probability(processed, proposal)
            transfer = confidence_transfer_mask(confidence, ~revealed, s.threshold)
            draft = mx.where(transfer, proposal, draft)
            revealed = revealed | transfer
            mx.eval(revealed, confidence, transfer)
            if bool(mx.all(revealed)) and not ends:
                stop_reason, ends = "all_positions_revealed", True
            accepted, scores, newly = revealed, confidence, int(mx.sum(transfer))
            score_kind = "confidence"
            if ends:
                committed = mx.where(revealed, draft, argmax)
                shown = committed
            else:
                noise = rng.tokens((1, length), block=block, step=k).astype(mx.int32).reshape(1, length)
                canvas = mx.where(revealed, draft, noise)
                shown = canvas
        else:
            accepted = entropy_bound_mask(entropy, s.entropy_bound)
            scores, score_kind = entropy, "entropy"
            if ends:
                committed = argmax
                shown = argmax
            else:
                proposal = proposals()
                noise = rng.tokens((1, length), block=block, step=k).astype(mx.int32).reshape(1, length)
                canvas = mx.where(accepted, proposal, noise)
                shown = canvas
            mx.eval(accepted)
            newly = int(mx.sum(accepted))
        if not ends:
            self_conditioning = network.self_conditioning_signal(processed)
        mx.eval(shown)
        yield Step(
            block=block, step=k, max_steps=s.steps,
            canvas=np.array(shown[0]), candidates=argmax_np,
            accepted=np.ones(length, dtype=bool) if ends else np.array(accepted[0]),
            newly_accepted=newly, scores=np.array(scores[0], dtype=np.float32), score_kind=score_kind,
            temperature=float(temperature), noise_is_mask=False,
        )
        if ends:
            mx.eval(committed)
            return [int(t) for t in np.array(committed[0])], k + 1, stop_reason
    raise AssertionError("unreachable: the last step always ends the block")


def checkpoint_defaults(model) -> dict:
    """What each setting left unset means for this checkpoint (for a settings panel)."""
    s = resolve_settings(Settings(), model.generation_config, model.network.canvas_length)
    return {
        "max_tokens": s.max_tokens, "max_denoising_steps": s.steps, "diffusion_sampler": s.sampler,
        "diffusion_threshold": s.threshold, "entropy_bound": s.entropy_bound, "t_min": s.t_min, "t_max": s.t_max,
        "stability_threshold": s.stability_threshold, "confidence_threshold": s.confidence_threshold,
        "temp": s.temp, "seed": s.seed, "diffusion_min_canvas_length": s.min_canvas,
        "diffusion_max_canvas_length": s.max_canvas, "diffusion_full_canvas": s.full_canvas,
    }
