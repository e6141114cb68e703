"""The one event protocol between the engine and anything that shows it (the app, the CLI, a server).

Events carry plain Python / NumPy data, never MLX arrays, so the UI thread never touches MLX (MLX streams
belong to the engine thread), and this module imports no MLX.

A generation (`engine.generate`) yields `Started`, then per block one `Step` per denoising step and one
`BlockCommitted`, and finally exactly one `Finished` (also after cancellation; a cancelled block may have
no `Step`). Text held back at the end of a block (a marker or a character that could still continue in the
next block) is delivered once, as `Finished.content_tail` / `reasoning_tail`, never as a pseudo-block. If
the generation raises instead, there is no `Finished`: the engine thread reports `GenerationFailed`.

A prompt long enough to take several encoder passes also reports each pass but the last as `Prefilling`,
before `Started`, through `engine.generate(progress=...)` (not in the event stream, so the stream's order
stays the same for every prompt).

The engine thread (`engine.thread.worker`) wraps these per job: `LoadProgress` / `ModelLoaded` / `LoadFailed` for
loading, `GenerationUpdate` (Prefilling, Started, BlockCommitted, Finished) or `GenerationFailed` for generating, and
the newest `Step` of a job as a `Frame` in a slot the UI polls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Literal, Mapping, Sequence, Union

import numpy as np

from .generation.fill import FillTemplate
from .images.budget import ImageBudget
from .settings import Settings

FinishReason = Literal["stop", "length", "cancelled"]
# LLaDA-2.1 editing ends a block with "edits_settled" (a step after the last mask edited nothing) or
# "max_post_steps" (it edited until its limit).
StopReason = Literal["max_denoising_steps", "stable_and_confident", "all_positions_revealed", "edits_settled",
                     "max_post_steps", "cancelled"]
ScoreKind = Literal["entropy", "confidence"]


@dataclass(frozen=True)
class Prefilling:
    """How far the encoder got with a long prompt (one per encoder pass after the first, before `Started`;
    only the engine thread's `GenerationUpdate` and `engine.generate(progress=...)` carry it)."""

    encoded_tokens: int         # of this turn's new prompt tokens
    total_tokens: int


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
    (DiffusionGemma entropy-bound) or confidence (confidence-threshold, LLaDA-2). `temperature` is the
    step's schedule temperature (kept for tests and debugging; no front end needs it).
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
    fixed: np.ndarray | None = None    # bool [L]: given text of a fill template (never changes); None = no fill
    edited: np.ndarray | None = None   # bool [L]: filled positions this step re-wrote (LLaDA-2.1 editing)


@dataclass(frozen=True)
class BlockCommitted:
    """A finished block: `token_ids` are what was emitted (cut at EOS / max_tokens); `committed` is the whole
    final block as the model decided it (for tests and replays). `accepted_per_step` is each of its steps'
    `Step.newly_accepted`, in order: a front end that only samples the newest frame still gets every step."""

    block: int
    token_ids: tuple[int, ...]
    committed: tuple[int, ...]
    content_delta: str
    reasoning_delta: str
    steps: int
    stop_reason: StopReason
    accepted_per_step: tuple[int, ...] = ()
    edits: int = 0              # positions re-written by LLaDA-2.1 editing in this block (each time counts)
    # A fill: character spans (start, end) of each hole's filling in the content delivered so far.
    filled_spans: tuple[tuple[int, int], ...] = ()


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
    """The end of every generation that did not raise. `content` / `reasoning` are the whole texts; the tails
    are the part of them no `BlockCommitted` delivered (a consumer that appends deltas appends these last)."""

    finish_reason: FinishReason
    token_ids: tuple[int, ...]
    content: str
    reasoning: str
    stats: Stats
    content_tail: str = ""
    reasoning_tail: str = ""
    filled_spans: tuple[tuple[int, int], ...] = ()   # a fill: each hole's filling in `content`, in hole order
    trajectory: bytes | None = None    # engine.generate(record=True): the encoded engine.recording.trajectory


Event = Union[Started, Step, BlockCommitted, Finished]


# ---- what a front end knows about the loaded model ------------------------------------------------------


@dataclass(frozen=True)
class ModelInfo:
    """The loaded model as a UI sees it: plain data, never the network."""

    name: str
    family: str                          # model_type
    label: str                           # "DiffusionGemma"
    supports_images: bool
    setting_defaults: Mapping[str, Any]  # what each unset engine.Settings field means for this checkpoint
    token_texts: tuple[str, ...] = ()    # each id decoded alone (the live canvas); empty for remote models
    image_budget: ImageBudget | None = None   # the soft-token cost of images, when images are supported
    context_length: int | None = None    # positions the model can attend to, when known
    # count_tokens(messages, think) -> prompt tokens the engine would make of them (images at their soft-token
    # cost): built on the engine thread from the tokenizer, thread-safe and MLX-free, so a UI can count on a
    # worker thread while the engine generates. None for remote models.
    count_tokens: Callable[[Sequence[dict], bool], int] | None = None
    remote: bool = False                 # served by another program (see tui.remote)
    frames: bool = True                  # live canvas frames arrive (a remote server may send committed text only)
    offered_settings: tuple[str, ...] | None = None   # the settings the backend takes; None = all of the family's
    # The chat template has a thinking channel (thinking on changes the prompt). False: `think` does nothing, and
    # a front end says so rather than accepting it silently (the LLaDA-2 demo's template always writes
    # "detailed thinking off"). True when unknown (remote models).
    thinking: bool = True
    notices: tuple[str, ...] = ()        # lines to show once on loading (a slow CPU BLAS), from the engine thread

    def token_text(self, token_id: int) -> str:
        texts = self.token_texts
        return texts[token_id] if 0 <= token_id < len(texts) else f"<{token_id}>"


# ---- the engine thread's events, per job ----------------------------------------------------------------


@dataclass(frozen=True)
class LoadProgress:
    job: int
    done_bytes: int
    total_bytes: int | None
    description: str
    # "download" (from the Hub), "read" (the weights from disk: description names the model and its size) or
    # "compile" (the CPU kernels, once per install)
    stage: str = "download"


@dataclass(frozen=True)
class ModelLoaded:
    job: int
    info: ModelInfo


@dataclass(frozen=True)
class LoadFailed:
    job: int
    message: str
    cancelled: bool = False


@dataclass(frozen=True)
class GenerationUpdate:
    """A rare event of a generation: `Prefilling` (long prompts), `Started`, `BlockCommitted` or `Finished`
    (steps go to the frame slot)."""

    job: int
    event: Union[Prefilling, Started, BlockCommitted, Finished]


@dataclass(frozen=True)
class GenerationFailed:
    """A generation that did not finish (its generator raised, or no model was loaded)."""

    job: int
    message: str


@dataclass(frozen=True)
class Frame:
    """The newest denoising step of a generation job, as left in the worker's frame slot."""

    job: int
    step: Step


WorkerEvent = Union[LoadProgress, ModelLoaded, LoadFailed, GenerationUpdate, GenerationFailed]


@dataclass(frozen=True)
class GenerationRequest:
    """One answer to generate: chat messages (images as {"type": "image", "path": ...} items of their user
    turn), settings, thinking, the conversation whose prefix cache the engine may reuse (any hashable
    key; None = no reuse), an optional answer template and whether to record the trajectory."""

    messages: tuple[dict, ...]
    settings: Settings
    think: bool = False
    conversation: Hashable | None = None
    fill: FillTemplate | None = None    # answer with this template (infilling, re-denoising a span)
    record: bool = False                # attach the encoded trajectory to Finished
