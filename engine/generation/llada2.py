"""LLaDA-2 block generation (masked diffusion, block by block, with a prefix KV cache).

Defaults follow the official LLaDA2.0 `generate()`: the prompt followed by `<|mask|>` ids, padded to whole
blocks counted from position 0; per block up to `steps` denoising forwards; each step commits the masked
positions whose confidence clears the threshold, or — when fewer than the step's quota n[s] do — the quota's
most confident ones (n = block/steps, the remainder spread over the first steps, so a block always fills up
within `steps`); committed tokens are final; generation stops after a block that contains EOS and the output is
cut just after the first EOS.

Deliberate differences from the official code:
* execution with a prefix KV cache (one block forward per step plus one commit forward per block) instead of
  recomputing the whole window, as mlx-vlm does — mathematically the same block-causal attention, so the
  trajectory is the same;
* `steps` is clamped to the block length: every one of the first block-length steps commits at least one
  position, so a block is full before any further step could run (no trajectory changes);
* temperature 0 is greedy even when top-k / top-p are set (the official code then samples at T = 1: this
  changes that trajectory, on purpose);
* an optional linear threshold schedule (`diffusion_threshold` -> `diffusion_threshold_end` over a block's
  steps, as mlx-vlm offers); constant by default, and only when enabled does it change a trajectory;
* an optional cap on the positions one step commits (`max_transfer_per_step`, as mlx-vlm offers), never below
  the step's quota; off by default. With a quota of 1 (steps = block length) it lets sure positions resolve
  several a step while positions unsure of each other resolve one after another, each seeing the last.

LLaDA-2.1 token editing (the 2.1 `generate()`, "M2T + T2T"), when `token_editing` is on: every step also
re-writes already filled positions (not the prompt, not a fill's given text) whose candidate differs from what
they hold with a probability above `editing_threshold`, also while masks remain; once a block has no mask,
up to `max_post_steps` more steps edit, and the first of them that edits nothing ends the block. Unmasking
keeps the 2.0 schedule (quota and step cap, as diffusers' LLaDA2 pipeline does; the 2.1 remote code commits
one fallback position per step with no cap), so a block is still never committed with a mask, and with
editing off the loop is the 2.0 loop, step for step. A 2.1 checkpoint is recognised by its name or folder
("LLaDA2.1", "llada-2.1", ...) or by `editing_threshold` in its generation_config; it then edits by default
with the 2.1 code's values (0.9, 16 post steps). An editing threshold means what it means in the 2.1 code
and SGLang's JointThreshold: an edit needs a probability strictly above it, so at 0 every filled position
whose prediction changed is re-written; "editing off" is its own setting (`token_editing`), never a
threshold value (diffusers reads a threshold <= 0 as off; the official code does not). The `llada_mode`
presets are the official modes: quality (0.7, editing at 0.5, 16 post steps) and speed (0.5, editing at
0.0, 16), each turning editing on; a setting given beside a preset wins.

The block loop itself is `engine.generation.driver`; this module supplies the plan and the unmasking step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import mlx.core as mx
import numpy as np

from ..errors import InputError, NonFiniteOutput
from ..events import Step
from ..models.families import LLADA2
from ..models.llada2_moe import DEFAULT_BLOCK_LENGTH
from ..settings import Settings, specs_for
from .common import first_set, is_cancelled
from .driver import BlockOutcome, Prefilled
from .forward import DenoiseCall
from .fused import analyse
from .sampling import select_transfer, threshold_schedule, transfer_schedule

DEFAULT_STEPS = 32
DEFAULT_THRESHOLD = 0.95
EDITING_THRESHOLD_21 = 0.9   # the 2.1 remote code's default (its docstring says 0.5)
DEFAULT_MAX_POST_STEPS = 16
PRESETS = {
    "quality": {"diffusion_threshold": 0.7, "editing_threshold": 0.5, "max_post_steps": 16},
    "speed": {"diffusion_threshold": 0.5, "editing_threshold": 0.0, "max_post_steps": 16},   # the official S mode
}
_NAME_21 = re.compile(r"llada[-_ ]?2[._]1(?!\d)", re.IGNORECASE)


@dataclass(frozen=True)
class Plan:
    """Concrete numbers for one generation, after defaults are applied (fields named as in `engine.Settings`)."""

    max_tokens: int
    block_length: int
    max_denoising_steps: int          # denoising forwards per block at most
    diffusion_threshold: float        # at the first step of a block
    diffusion_threshold_end: float    # at the last step of a block
    max_transfer_per_step: int        # 0 = no cap (the official loop)
    temp: float
    top_k: int | None
    top_p: float | None
    seed: int
    token_editing: bool = False       # off: the LLaDA-2.0 loop
    editing_threshold: float = EDITING_THRESHOLD_21   # an edit needs a probability above it (0: any change)
    max_post_steps: int = DEFAULT_MAX_POST_STEPS
    llada_mode: str | None = None

    @property
    def editing(self) -> bool:
        return self.token_editing


def resolve_plan(settings: Settings, generation_config: dict, editing_checkpoint: bool = False) -> Plan:
    """None -> the generation_config's `block_length`, `steps` and `threshold` (the official generate()'s names),
    else the official defaults: block 32, steps 32, threshold 0.95, no cap on a step's commits
    (`max_transfer_per_step`, mlx-vlm's name); greedy; max_tokens from the checkpoint's
    generation_config (max_new_tokens), else 256; editing off, or for a 2.1 checkpoint
    (`editing_checkpoint`) the 2.1 code's 0.9 with 16 post steps. Asking for an editing threshold or a preset
    turns editing on unless `token_editing` says off. A `llada_mode` preset fills what is unset."""
    g = generation_config or {}
    preset = PRESETS.get(settings.llada_mode, {})
    block_length = int(first_set(settings.block_length, g.get("block_length"), DEFAULT_BLOCK_LENGTH))
    max_tokens = int(first_set(settings.max_tokens, g.get("max_new_tokens"), 256))
    # The official loop caps steps at gen_length (its quota then commits several tokens per step). Steps beyond
    # the block length would never run (the first block-length steps commit at least one position each), so
    # they are clamped too, and Step.max_steps shows the real bound.
    steps = min(int(first_set(settings.max_denoising_steps, g.get("steps"), DEFAULT_STEPS)), block_length, max_tokens)
    threshold = float(first_set(settings.diffusion_threshold, preset.get("diffusion_threshold"), g.get("threshold"),
                                DEFAULT_THRESHOLD))
    editing = first_set(settings.editing_threshold, preset.get("editing_threshold"), g.get("editing_threshold"),
                        EDITING_THRESHOLD_21)
    editing_on = first_set(settings.token_editing, True if settings.editing_threshold is not None or preset else None,
                           editing_checkpoint or "editing_threshold" in g)
    return Plan(
        max_tokens=max_tokens,
        block_length=block_length,
        max_denoising_steps=steps,
        diffusion_threshold=threshold,
        diffusion_threshold_end=float(first_set(settings.diffusion_threshold_end, threshold)),
        max_transfer_per_step=int(first_set(settings.max_transfer_per_step, g.get("max_transfer_per_step"), 0)),
        temp=float(first_set(settings.temp, 0.0)),
        top_k=settings.top_k or None,
        top_p=settings.top_p if settings.top_p is not None and settings.top_p < 1.0 else None,
        seed=int(first_set(settings.seed, 0)),
        token_editing=bool(editing_on),
        editing_threshold=float(editing),
        max_post_steps=int(first_set(settings.max_post_steps, preset.get("max_post_steps"), g.get("max_post_steps"),
                                     DEFAULT_MAX_POST_STEPS)),
        llada_mode=settings.llada_mode,
    )


def is_editing_checkpoint(name: str, path, generation_config: dict) -> bool:
    """A LLaDA-2.1 checkpoint: its config says nothing of it (same model_type and architecture as 2.0), so it is
    known by its name (Hub id or folder, any part of the path: the Hub cache keeps the id in a parent folder)
    or by editing values in its generation_config."""
    names = [str(name)] + ([*Path(path).parts] if path is not None else [])
    return "editing_threshold" in (generation_config or {}) or any(_NAME_21.search(n) for n in names)


def _editing_checkpoint(model) -> bool:
    return is_editing_checkpoint(getattr(model, "name", ""), getattr(model, "path", None), model.generation_config)


def checkpoint_defaults(model) -> dict:
    """What each setting left unset means for this checkpoint (for a settings panel)."""
    plan = resolve_plan(Settings(), model.generation_config, _editing_checkpoint(model))
    return {name: getattr(plan, name) for name in specs_for(LLADA2)}


def propose(logits: mx.array, plan: Plan, randomness, block: int, step: int):
    """Candidate token x0 for every position of the block ([L, V] logits) and its probability under the
    distribution it was chosen from (the confidence), as the fused analysis of the step's logits."""
    recorded = randomness.proposals(logits.shape[0], block=block, step=step) if plan.temp != 0 else None
    uniforms = randomness.uniform(logits.shape[0], block=block, step=step) \
        if plan.temp != 0 and recorded is None else None
    analysis = analyse(logits, temp=plan.temp, uniforms=uniforms, proposal=recorded, top_k=plan.top_k,
                       top_p=plan.top_p, confidence_from="proposal", check_finite=step == 0)
    if uniforms is not None:
        randomness.sampled(analysis.proposal, block=block, step=step)
    return analysis


class Denoiser:
    family = LLADA2
    includes_stop = True

    def __init__(self, network, plan: Plan, randomness):
        self.network, self.plan, self.rng = network, plan, randomness

    def block_length(self, remaining: int) -> int:
        return self.plan.block_length

    def prefill(self, prompt_ids: list[int], session, cancel=None, progress=None) -> Prefilled:
        """Cache the prompt's whole blocks (its tail belongs to the first denoised block), reusing the
        session's cache for the common prefix."""
        block_length = self.plan.block_length
        whole = len(prompt_ids) - len(prompt_ids) % block_length
        kept = 0
        cache = session.cache if session is not None else None
        # Under block-causal attention the cached keys depend on the block length they were computed with.
        if cache is not None and getattr(cache, "block_length", None) == block_length:
            kept = session.reusable_prefix(prompt_ids, self.family, align=block_length)
        if kept:
            cache.trim(kept)
        else:
            cache = self.network.make_cache(block_length)
        if whole > kept:
            self.network.prefill(mx.array([prompt_ids[kept:whole]], dtype=mx.int32), cache, block_length, cancel,
                                 progress)
        return Prefilled(cache, list(prompt_ids[:whole]), len(prompt_ids) - kept)

    def commit(self, cache, ids: list[int]) -> None:
        self.network.commit(mx.array([ids], dtype=mx.int32), cache)

    def final_commit(self, outcome: BlockOutcome, emitted: list[int]) -> list[int]:
        # Blocks are cached whole (block-causal attention); the next turn reuses them up to its first difference.
        return outcome.ids

    def fill_layout(self) -> tuple[int, bool, int | None]:
        # Blocks sit at multiples of the block length (block-causal attention); the positions after a fill's
        # template in its last block are given end-of-text ids, as the model pads a finished answer.
        return self.plan.block_length, True, int(self.network.eos_token_ids[0])

    def denoise_block(self, cache, block: int, length: int, prompt_tail: list[int], cancel, given=None):
        """Unmask one block (editing filled positions too, with LLaDA-2.1 editing on); yields Step events;
        returns the outcome. `given` (a fill) fixes positions like the prompt tail: never masked, never edited."""
        network, plan = self.network, self.plan
        tail = len(prompt_tail)
        ids = np.full(length, network.mask_token_id, dtype=np.int32)
        ids[:tail] = prompt_tail
        frozen = np.arange(length) < tail        # never unmasked, never edited
        shown_fixed = None
        if given is not None:
            ids[tail:] = np.where(given.fixed, given.ids, ids[tail:])
            frozen[tail:] |= given.fixed
            if frozen.all():  # nothing to denoise: the block is given text
                return BlockOutcome([int(t) for t in ids], 0, "all_positions_revealed")
            shown_fixed = frozen.copy()
            shown_fixed[:tail - given.lead_in_tail] = False
        prompt_positions = tail - (given.lead_in_tail if given is not None else 0)
        masked = ~frozen
        # What a position scored when it was committed (prompt positions count as certain).
        committed_scores = np.ones(length, dtype=np.float32)
        steps = plan.max_denoising_steps
        quotas = transfer_schedule(length, steps)
        thresholds = threshold_schedule(plan.diffusion_threshold, plan.diffusion_threshold_end, steps)
        max_steps = steps + (plan.max_post_steps if plan.editing else 0)
        # Each step commits at least min(quota, masks left) and the quotas add up to the block length, so the
        # block fills up within `steps` forwards and is never committed with a mask left in it (edits only ever
        # re-write filled positions, so they cannot delay that).
        step = post = edits = 0
        stop_reason = "all_positions_revealed"
        while True:
            unmasking = bool(masked.any())
            if not unmasking:
                post += 1
                if not plan.editing or post > plan.max_post_steps:
                    stop_reason = "max_post_steps" if plan.editing else stop_reason
                    break
            if is_cancelled(cancel):
                return BlockOutcome([], step, "cancelled")
            logits = (yield DenoiseCall(mx.array(ids[None]), cache))[0]
            # One read of the logits (engine.generation.fused); a block's first step also checks them for NaN/Inf.
            analysis = propose(logits, plan, self.rng, block, step)
            if not analysis.finite:
                raise NonFiniteOutput()
            x0_np, probability_np = analysis.proposal, analysis.probability
            transfer = np.zeros(length, dtype=bool)
            if unmasking:
                confidence = np.where(masked, probability_np, -np.inf)
                transfer = select_transfer(confidence, quotas[step], thresholds[step], plan.max_transfer_per_step)
            edited = None
            if plan.editing:
                # (never into the mask id: an edit must not take a filled position back to a mask)
                edited = ~masked & ~frozen & (probability_np > plan.editing_threshold) & (x0_np != ids) & \
                    (x0_np != network.mask_token_id)
                edits += int(edited.sum())
            changed = transfer if edited is None else transfer | edited
            ids = np.where(changed, x0_np, ids).astype(np.int32)
            committed_scores = np.where(changed, probability_np, committed_scores)
            scores = np.where(masked, probability_np, committed_scores)
            masked &= ~transfer
            yield Step(
                block=block, step=step, max_steps=max_steps,
                canvas=ids.copy(), candidates=x0_np, accepted=~masked, newly_accepted=int(transfer.sum()),
                scores=scores, score_kind="confidence", temperature=plan.temp, noise_is_mask=True,
                prompt_positions=prompt_positions, fixed=shown_fixed, edited=edited,
            )
            step += 1
            if not unmasking and not edited.any():
                stop_reason = "edits_settled"
                break
        return BlockOutcome([int(t) for t in ids], step, stop_reason, edits)


def plan_for(model, settings: Settings) -> Plan:
    """The request's plan: its settings over this checkpoint's defaults."""
    return resolve_plan(settings, model.generation_config, _editing_checkpoint(model))


def build(model, plan: Plan, randomness_for, pixel_values=None, token_type_ids=None) -> Denoiser:
    """The denoiser for one request; raises before any work on bad input."""
    if pixel_values is not None:
        raise InputError("LLaDA-2 reads text only; it cannot take images")
    return Denoiser(model.network, plan, randomness_for(plan.seed))
