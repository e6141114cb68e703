"""Pure sampler maths for both families (the role of mlx-lm's `sample_utils`): functions of logits, scores and
schedules, no state, no model. Each is tested against the reference implementations' recorded values.

The vocabulary-wide part of a step (softmax, entropy, sampling) is `engine.generation.fused`; what is here
works per position ([L] arrays, NumPy, on the host) or filters logits on the device (top-k, top-p).
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

# ---- distributions (on the device; the host path is in fused.py) ----------------------------------------------


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


# ---- DiffusionGemma: temperature schedule and acceptance ------------------------------------------------------


def linear_temperature(cur_step: int, steps: int, t_min: float, t_max: float) -> np.float32:
    """t = t_min + (t_max - t_min) * cur_step / N (cur_step counts the steps remaining), in float32 like the
    reference's tensor arithmetic."""
    f = np.float32
    return f(t_min) + f(t_max - t_min) * f(cur_step) / f(steps)


def entropy_bound_mask(entropy: np.ndarray, bound: float) -> np.ndarray:
    """Accept the lowest-entropy positions while the entropies sorted before them sum to <= bound.

    The lowest-entropy position is always accepted (empty sum). Works on the last axis; ties go to the lower
    index (a stable sort, as the reference's)."""
    entropy = np.asarray(entropy, np.float32)
    order = np.argsort(entropy, axis=-1, kind="stable")
    ranked = np.take_along_axis(entropy, order, axis=-1)
    accepted_ranked = (np.cumsum(ranked, axis=-1) - ranked) <= np.float32(bound)
    accepted = np.empty_like(accepted_ranked)
    np.put_along_axis(accepted, order, accepted_ranked, axis=-1)
    return accepted


def confidence_transfer_mask(confidence: np.ndarray, unrevealed: np.ndarray, threshold: float,
                             force_all: bool = False) -> np.ndarray:
    """Unrevealed positions with confidence >= threshold; if none, the single most confident unrevealed one
    (per row of the last axis)."""
    if force_all:
        return np.asarray(unrevealed, bool)
    confidence, unrevealed = np.asarray(confidence, np.float32), np.asarray(unrevealed, bool)
    transfer = unrevealed & (confidence >= np.float32(threshold))
    best = np.argmax(np.where(unrevealed, confidence, -np.inf), axis=-1)
    fallback = (np.arange(confidence.shape[-1]) == best[..., None]) & unrevealed
    need_fallback = ~transfer.any(axis=-1, keepdims=True) & unrevealed.any(axis=-1, keepdims=True)
    return np.where(need_fallback, fallback, transfer)


# ---- LLaDA-2: how many positions a step commits ---------------------------------------------------------------


def transfer_schedule(block_length: int, steps: int) -> list[int]:
    """n[s]: the fewest positions step s commits. block/steps each, the remainder one each on the first steps."""
    base, remainder = divmod(block_length, steps)
    return [base + (1 if s < remainder else 0) for s in range(steps)]


def threshold_schedule(start: float, end: float, steps: int) -> list[float]:
    """Linear from `start` at the first step of a block to `end` at its last."""
    return [start - (start - end) * s / max(1, steps - 1) for s in range(steps)]


def select_transfer(confidence: np.ndarray, quota: int, threshold: float, cap: int = 0) -> np.ndarray:
    """Positions to commit this step. `confidence` is -inf where nothing can be committed (not masked).

    Everything strictly above the threshold when that reaches the quota; otherwise the `quota` most confident
    positions (fewer if fewer are masked), ties to the lowest index. A NaN confidence still counts as masked
    and ranks below every number, so the quota (and with it the block's step schedule) always holds.
    `cap` > 0 keeps only the `cap` most confident of them (mlx-vlm's `max_transfer_per_step`), never fewer than
    the quota: positions unsure of each other then resolve one after another instead of in one step."""
    high = confidence > threshold
    count = int(high.sum())
    if count < quota:
        count = min(quota, int((~np.isneginf(confidence)).sum()))
    elif cap <= 0 or count <= max(cap, quota):
        return high
    else:
        count = max(cap, quota)
    ranked = np.where(np.isnan(confidence), np.finfo(confidence.dtype).min, confidence)
    chosen = np.argsort(-ranked, kind="stable")[:count]
    transfer = np.zeros(confidence.shape, dtype=bool)
    transfer[chosen] = True
    return transfer
