"""The typed event stream that `engine.generate` yields.

This is the only thing the UI learns about a generation. Events carry plain Python / NumPy data,
never MLX arrays, so the UI thread never touches MLX (MLX streams belong to the engine thread).

Order of a generation: `Started`, then per block one `Step` per denoising step and one `BlockCommitted`,
and finally exactly one `Finished` (also after cancellation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

import numpy as np

FinishReason = Literal["stop", "length", "cancelled"]
ScoreKind = Literal["entropy", "confidence"]


@dataclass(frozen=True)
class Started:
    prompt_tokens: int          # tokens in the whole prompt
    encoded_tokens: int         # tokens actually run through the encoder this turn (prefix reuse)
    prefill_s: float
    block_length: int           # canvas / block size of the first block


@dataclass(frozen=True)
class Step:
    """One denoising step of the active block.

    `canvas` is what the block holds *after* the step (accepted tokens plus noise / mask ids for the
    rest); `candidates` are the model's current best guesses (argmax) for every position; `accepted`
    marks positions that are settled after this step. `scores` is the per-position entropy
    (DiffusionGemma entropy-bound) or confidence (confidence-threshold, LLaDA-2).
    """

    block: int
    step: int                   # 0-based
    max_steps: int
    canvas: np.ndarray          # int32 [L]
    candidates: np.ndarray      # int32 [L]
    accepted: np.ndarray        # bool [L]
    newly_accepted: int         # how many positions this step accepted / transferred
    scores: np.ndarray          # float32 [L]
    score_kind: ScoreKind
    temperature: float | None
    noise_is_mask: bool         # True when unaccepted positions hold a mask id (LLaDA-2), False for random noise
    prompt_positions: int = 0   # leading positions of the block that belong to the prompt (LLaDA-2)


@dataclass(frozen=True)
class BlockCommitted:
    """A finished block: `token_ids` are what was emitted (cut at EOS / max_tokens)."""

    block: int
    token_ids: tuple[int, ...]
    committed: tuple[int, ...]   # the whole final block as the model decided it
    content_delta: str
    reasoning_delta: str
    steps: int
    stop_reason: str             # "max_denoising_steps" | "stable_and_confident" | "all_positions_revealed" | "cancelled" ...


@dataclass(frozen=True)
class Stats:
    steps_per_block: tuple[int, ...]
    prompt_tokens: int
    generated_tokens: int
    work_tokens: int             # sum over blocks of block length x steps
    prefill_s: float
    denoise_s: float
    total_s: float
    peak_memory_bytes: int

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / self.total_s if self.total_s > 0 else 0.0

    @property
    def ms_per_step(self) -> float:
        steps = sum(self.steps_per_block)
        return 1000.0 * self.denoise_s / steps if steps else 0.0


@dataclass(frozen=True)
class Finished:
    finish_reason: FinishReason
    token_ids: tuple[int, ...]
    content: str
    reasoning: str
    stats: Stats
    extra: dict = field(default_factory=dict)


Event = Union[Started, Step, BlockCommitted, Finished]
