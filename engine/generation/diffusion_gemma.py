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

The block loop itself is `engine.generation.driver`; this module supplies the plan, the prefill with image
reuse, and the two samplers as small strategies over one step loop.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import mlx.core as mx
import numpy as np

from ..errors import InputError, NonFiniteOutput
from ..events import Step
from ..models.families import DIFFUSION_GEMMA
from ..images.processor import image_runs
from ..settings import Settings, check_temperature_schedule, specs_for
from .common import first_set, is_cancelled
from .driver import BlockOutcome, Prefilled
from .forward import DenoiseCall
from .fused import analyse
from .sampling import confidence_transfer_mask, entropy_bound_mask, linear_temperature


@dataclass(frozen=True)
class Plan:
    """Concrete numbers for one generation, after checkpoint defaults are applied (fields named as in
    `engine.Settings`, so the plan of an empty `Settings` is what the sampler panel shows as defaults)."""

    max_tokens: int
    max_denoising_steps: int
    diffusion_sampler: str
    entropy_bound: float
    diffusion_threshold: float
    t_min: float
    t_max: float
    stability_threshold: int
    confidence_threshold: float
    temp: float
    diffusion_min_canvas_length: int
    diffusion_max_canvas_length: int
    diffusion_full_canvas: bool
    seed: int
    canvas_length: int          # the checkpoint's canvas

    def block_length(self, remaining: int) -> int:
        if self.diffusion_full_canvas:
            return self.canvas_length
        return min(self.diffusion_max_canvas_length, max(remaining, self.diffusion_min_canvas_length))


def resolve_plan(settings: Settings, generation_config: dict, canvas_length: int) -> Plan:
    """Settings left as None take the checkpoint's generation_config (any of its known spellings), then the
    reference defaults (48 steps, bound 0.1, t 0.4..0.8, stability 1, confidence 0.005, 256 tokens)."""
    g = generation_config or {}
    sampler_cfg = g.get("sampler_config") or {}
    schedule = g.get("linear_temperature_schedule_config") or g.get("temperature_schedule") or {}
    stopping = g.get("diffusion_stopping_config") or g.get("stopping_config") or {}
    max_canvas = min(canvas_length, settings.diffusion_max_canvas_length or canvas_length)
    plan = Plan(
        max_tokens=int(first_set(settings.max_tokens, g.get("max_new_tokens"), 256)),
        max_denoising_steps=int(first_set(settings.max_denoising_steps, g.get("max_denoising_steps"), 48)),
        diffusion_sampler=settings.diffusion_sampler or "entropy-bound",
        entropy_bound=float(first_set(settings.entropy_bound, sampler_cfg.get("entropy_bound"), 0.1)),
        diffusion_threshold=float(first_set(settings.diffusion_threshold, 0.9)),
        t_min=float(first_set(settings.t_min, g.get("t_min"), schedule.get("t_min"), 0.4)),
        t_max=float(first_set(settings.t_max, g.get("t_max"), schedule.get("t_max"), 0.8)),
        stability_threshold=int(first_set(settings.stability_threshold, g.get("stability_threshold"),
                                          stopping.get("stability_threshold"), 1)),
        confidence_threshold=float(first_set(settings.confidence_threshold, g.get("confidence_threshold"),
                                             stopping.get("confidence_threshold"), 0.005)),
        temp=float(first_set(settings.temp, 1.0)),
        diffusion_min_canvas_length=min(max_canvas, settings.diffusion_min_canvas_length or 64),
        diffusion_max_canvas_length=max_canvas,
        diffusion_full_canvas=bool(settings.diffusion_full_canvas),
        seed=int(first_set(settings.seed, 0)),
        canvas_length=canvas_length,
    )
    check_temperature_schedule(plan.t_min, plan.t_max)
    return plan


def checkpoint_defaults(model) -> dict:
    """What each setting left unset means for this checkpoint (for a settings panel)."""
    plan = resolve_plan(Settings(), model.generation_config, model.network.canvas_length)
    return {name: getattr(plan, name) for name in specs_for(DIFFUSION_GEMMA)}


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


# ---- the two samplers (per position, on the host: the vocabulary-wide work is engine.generation.fused) ----------


@dataclass
class StepResult:
    """What a sampler decided at one step ([L] NumPy arrays)."""

    accepted: np.ndarray         # settled positions after this step
    scores: np.ndarray           # entropy or confidence per position
    newly: int                   # how many positions this step accepted
    committed: np.ndarray | None  # the block, when the sampler ends it
    keep: np.ndarray | None = None   # positions the next canvas keeps (the rest are renoised)
    kept_ids: np.ndarray | None = None
    all_revealed: bool = False

    def canvas(self, noise: np.ndarray) -> np.ndarray:
        return np.where(self.keep, self.kept_ids, noise).astype(np.int32)


class EntropyBound:
    """The official sampler: accept the lowest-entropy positions within the bound; renoise every other one.

    A fill's given positions (`fixed`, [L] bool, with their ids) are accepted at every step and hold their
    ids; they count as entropy 0 for the bound, so they cost none of it and the holes get the whole budget
    (the lowest-entropy hole is still always accepted: only zeros are summed before it)."""

    score_kind = "entropy"
    confidence_from = None

    def __init__(self, plan: Plan, length: int, fixed=None, fixed_ids=None):
        self.plan, self.fixed, self.fixed_ids = plan, fixed, fixed_ids

    def step(self, ends: bool, analysis) -> StepResult:
        fixed, entropy = self.fixed, analysis.entropy
        if fixed is None:
            accepted = entropy_bound_mask(entropy, self.plan.entropy_bound)
            newly = int(accepted.sum())
        else:
            accepted = entropy_bound_mask(np.where(fixed, 0.0, entropy), self.plan.entropy_bound) | fixed
            newly = int((accepted & ~fixed).sum())
        if ends:
            return StepResult(accepted, entropy, newly, self._given(analysis.argmax))
        return StepResult(accepted, entropy, newly, None, accepted, self._given(analysis.proposal))

    def _given(self, ids: np.ndarray) -> np.ndarray:
        return ids if self.fixed is None else np.where(self.fixed, self.fixed_ids, ids)


class ConfidenceThreshold:
    """mlx-vlm's heuristic: reveal proposals whose probability clears the threshold (at least the best one),
    keep revealed positions fixed, and commit what was revealed (argmax where nothing was). A fill's given
    positions start revealed, with their ids as the draft."""

    score_kind = "confidence"
    confidence_from = "processed"

    def __init__(self, plan: Plan, length: int, fixed=None, fixed_ids=None):
        self.plan = plan
        self.revealed = np.zeros(length, dtype=bool) if fixed is None else fixed.copy()
        # read only where revealed
        self.draft = np.zeros(length, dtype=np.int32) if fixed_ids is None else fixed_ids.copy()

    def step(self, ends: bool, analysis) -> StepResult:
        confidence = analysis.probability
        transfer = confidence_transfer_mask(confidence, ~self.revealed, self.plan.diffusion_threshold)
        self.draft = np.where(transfer, analysis.proposal, self.draft)
        self.revealed = self.revealed | transfer
        all_revealed = bool(self.revealed.all())
        if ends or all_revealed:
            committed = np.where(self.revealed, self.draft, analysis.argmax)
            return StepResult(self.revealed, confidence, int(transfer.sum()), committed, all_revealed=all_revealed)
        return StepResult(self.revealed, confidence, int(transfer.sum()), None, self.revealed, self.draft)


SAMPLERS = {"entropy-bound": EntropyBound, "confidence-threshold": ConfidenceThreshold}


# ---- the denoiser the block driver runs --------------------------------------------------------------------


class Denoiser:
    family = DIFFUSION_GEMMA
    includes_stop = False

    def __init__(self, network, plan: Plan, randomness, pixel_values=None, token_type_ids=None):
        self.network, self.plan, self.rng = network, plan, randomness
        self.pixel_values, self.token_type_ids = pixel_values, token_type_ids

    def block_length(self, remaining: int) -> int:
        return self.plan.block_length(remaining)

    def prefill(self, prompt_ids: list[int], session, cancel=None, progress=None) -> Prefilled:
        """Encode the prompt, reusing the session's cache for the common prefix (images compared by pixels)."""
        pixel_values, token_type_ids = self.pixel_values, self.token_type_ids
        images = []
        if pixel_values:
            images = [(start, end, hashlib.sha1(np.asarray(pixels).tobytes()).hexdigest())
                      for (start, end), pixels in zip(image_runs(token_type_ids), pixel_values)]
        kept = session.reusable_prefix(prompt_ids, self.family, images=images) if session is not None else 0
        cache = None
        if kept:
            cache = session.cache
            cache.trim(kept)
        kwargs = {}
        # Only images whose token runs lie in the part still to encode go through the vision tower.
        new_pixels = [pixels for pixels, (start, _, _) in zip(pixel_values or [], images) if start >= kept]
        if new_pixels:
            kwargs = {"pixel_values": new_pixels, "token_type_ids": mx.array([token_type_ids[kept:]], dtype=mx.int32)}
        cache = self.network.prefill(mx.array([prompt_ids[kept:]], dtype=mx.int32), cache, cancel=cancel,
                                     progress=progress, **kwargs)
        return Prefilled(cache, list(prompt_ids), len(prompt_ids) - kept, images)

    def commit(self, cache, ids: list[int]) -> None:
        self.network.commit(mx.array([ids], dtype=mx.int32), cache)

    def final_commit(self, outcome: BlockOutcome, emitted: list[int]) -> list[int]:
        # The cache then holds exactly prompt + reply, which the next turn's prompt starts with.
        return emitted

    def fill_layout(self) -> tuple[int, bool, int | None]:
        # A canvas may be any length up to the maximum: a fill's blocks end where its template says.
        return self.plan.diffusion_max_canvas_length, False, None

    def denoise_block(self, cache, block: int, length: int, prompt_tail: list[int], cancel, given=None):
        """Denoise one canvas; yields Step events; returns the outcome. `given` (a fill) fixes positions: they
        start accepted with their ids, and the stop rule reads only the holes.

        Per step: one decoder pass, one read of its logits (engine.generation.fused: softcap, temperature,
        softmax, entropy and the sampled proposals in one pass), then the per-position decisions on the host;
        the next canvas and the self-conditioning product are queued for the next decoder pass."""
        network, plan, rng = self.network, self.plan, self.rng
        fixed = fixed_ids = holes = None
        if given is not None:
            if given.fixed.all():  # nothing to denoise: the block is given text
                return BlockOutcome([int(t) for t in given.ids], 0, "all_positions_revealed")
            fixed, fixed_ids, holes = given.fixed, np.asarray(given.ids, np.int32), ~given.fixed
        sampler = SAMPLERS[plan.diffusion_sampler](plan, length, fixed, fixed_ids)
        canvas = np.asarray(rng.tokens(length, block=block, step=-1), np.int32)
        if fixed is not None:
            canvas = np.where(fixed, fixed_ids, canvas)
        self_conditioning = reusable = None
        tracker = StabilityTracker(plan.stability_threshold)
        steps = plan.max_denoising_steps
        for k in range(steps):
            if is_cancelled(cancel):
                return BlockOutcome([], k, "cancelled")
            cur_step = steps - k
            logits = (yield DenoiseCall(mx.array(canvas[None]), cache,
                                        {"self_conditioning": self_conditioning, "softcap": False}))[0]
            temperature = linear_temperature(cur_step, steps, plan.t_min, plan.t_max)
            recorded = rng.proposals(length, block=block, step=k) if plan.temp != 0 else None
            uniforms = rng.uniform(length, block=block, step=k) if plan.temp != 0 and recorded is None else None
            # A block's first step checks its logits for NaN/Inf in the same read (no extra host sync).
            analysis = analyse(logits, softcap=network.softcap, temperature=float(temperature), temp=plan.temp,
                               uniforms=uniforms, proposal=recorded, confidence_from=sampler.confidence_from,
                               probabilities=True, check_finite=k == 0, probabilities_into=reusable)
            if not analysis.finite:
                raise NonFiniteOutput()
            if uniforms is not None:
                rng.sampled(analysis.proposal, block=block, step=k)
            argmax = analysis.argmax
            stable = tracker.update(argmax if holes is None else argmax[holes])
            confident = float(analysis.entropy[holes if holes is not None else slice(None)].mean()) < \
                plan.confidence_threshold
            stop_reason = "stable_and_confident" if stable and confident else \
                "max_denoising_steps" if cur_step == 1 else None
            result = sampler.step(stop_reason is not None, analysis)
            if result.all_revealed and stop_reason is None:
                stop_reason = "all_positions_revealed"
            ends = result.committed is not None
            if not ends:
                # No renoise draw at a step that ends the block (it could not change the output).
                canvas = result.canvas(np.asarray(rng.tokens(length, block=block, step=k), np.int32))
                self_conditioning = network.self_conditioning_from_probabilities(analysis.probabilities)
                # consumed by the next step's logits, evaluated before its analysis writes a new softmax there
                reusable = analysis.probabilities
            yield Step(
                block=block, step=k, max_steps=steps,
                canvas=result.committed.astype(np.int32) if ends else canvas, candidates=argmax,
                accepted=np.ones(length, dtype=bool) if ends else result.accepted,
                newly_accepted=result.newly, scores=np.asarray(result.scores, np.float32),
                score_kind=sampler.score_kind, temperature=float(temperature), noise_is_mask=False,
                fixed=None if given is None else given.fixed,
            )
            if ends:
                return BlockOutcome([int(t) for t in result.committed], k + 1, stop_reason)
        raise AssertionError("unreachable: the last step always ends the block")


def plan_for(model, settings: Settings) -> Plan:
    """The request's plan: its settings over this checkpoint's defaults."""
    return resolve_plan(settings, model.generation_config, model.network.canvas_length)


def build(model, plan: Plan, randomness_for, pixel_values=None, token_type_ids=None) -> Denoiser:
    """The denoiser for one request; raises before any work on bad input."""
    if pixel_values is not None and not model.supports_images:
        raise InputError("this checkpoint has no vision tower; it cannot take images")
    return Denoiser(model.network, plan, randomness_for(plan.seed), pixel_values, token_type_ids)
