"""The answer being written, as the chat session tracks it (plain data, no Textual): which job, where it is
shown, how far it got, and what it is saved with (a fill's spans, the edits per block, the recording)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.events import Frame, Prefilling, Started
from engine.settings import Settings

from .frame_pacer import FramePacer
from .live_steps import LiveSteps
from .prefill_eta import PrefillEstimate

# What a templated answer was: the person's text with holes (`/fill`), or a span of an answer written again.
FillKind = Literal["fill", "revise"]


@dataclass
class Generation:
    """The answer being written: which job, where it is shown and how far it got."""

    job: int
    conversation_id: int
    answer: Any                  # the view's handle
    settings: Settings
    token_budget: int | None
    started_at: float
    revision_of: int | None = None   # the assistant message this answer is a new revision of
    fill_kind: FillKind | None = None   # the answer is a template's (GenerationRequest.fill)
    think: bool = False          # asked with thinking on
    frames: bool = True          # the backend shows canvas frames (a remote server: committed blocks only)
    started: Started | None = None
    committed_block: int = -1
    generated_tokens: int = 0
    content: str = ""
    reasoning: str = ""
    accepted_per_block: list[list[int]] = field(default_factory=list)
    edits_per_block: list[int] = field(default_factory=list)   # LLaDA-2.1 token editing
    filled_spans: tuple[tuple[int, int], ...] = ()
    trajectory: bytes | None = None  # the recording Finished carried, saved with the answer
    last_frame: Frame | None = None
    prefilling: Prefilling | None = None   # how far a long prompt's encoding got
    prefill_estimate: PrefillEstimate = field(default_factory=PrefillEstimate)   # and how long the rest takes
    detached: bool = False       # the person switched away; results still go to the store
    pacer: FramePacer = field(default_factory=FramePacer)
    live_steps: LiveSteps = field(default_factory=LiveSteps)

    def total_blocks(self, block_length: int) -> int | None:
        """Blocks this answer can take at most, given what is committed and the current block length (unknown
        for a template: the engine cuts it into blocks)."""
        if not self.token_budget or block_length <= 0 or self.fill_kind is not None:
            return None
        remaining = max(self.token_budget - self.generated_tokens, 0)
        return self.committed_block + 1 + max(math.ceil(remaining / block_length), 1)

    def saved_extras(self) -> dict:
        """What the answer's stats keep beyond the engine's numbers: whether it was asked to think (the export says
        so per answer: a model may answer without reasoning while thinking is on), edits per block, a template's
        spans."""
        extras: dict = {"think": bool(self.think)}
        if any(self.edits_per_block):
            extras["edits_per_block"] = list(self.edits_per_block)
        if self.fill_kind is not None:
            extras["fill"] = self.fill_kind
            extras["filled_spans"] = [list(span) for span in self.filled_spans]
        return extras

