"""The one block loop both families share: prefill (with prefix reuse), `Started`, then per block
denoise → emit → `BlockCommitted` → commit, the session's tail, and the closing `Finished`.

A family supplies only a `Denoiser` — how its prompt is cached, how long its next block is, how one block is
denoised (yielding `Step`s) and how a finished block enters the cache — so a third family is one more
denoiser, not a third copy of this loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Generator, Protocol

from ..events import BlockCommitted, Started, Step, StopReason
from .text import TextAssembler
from .fill import FillCanvas
from ..models.chunking import Cancelled
from .common import Clock, cancelled_block, closing_events, emit_block
from .fill_run import BlockFill, FillRun, FillText


@dataclass
class Prefilled:
    """The prompt in the cache: what the cache holds, and how much of it this turn had to encode."""

    cache: Any
    cached_ids: list[int]            # ids the cache holds (a block-aligned family may hold fewer than the prompt)
    encoded_tokens: int              # prompt tokens run through the network this turn (not served by the session)
    images: list = field(default_factory=list)   # the prompt's image runs (engine.generation.session.ImageRun)


@dataclass(frozen=True)
class BlockOutcome:
    ids: list[int]                   # the whole final block (prompt tail included, for a family that has one)
    steps: int
    stop_reason: StopReason
    edits: int = 0                   # positions re-written by token editing (LLaDA-2.1)


class Denoiser(Protocol):
    family: str
    includes_stop: bool              # whether the stop id is emitted as the last token (LLaDA-2) or not

    def prefill(self, prompt_ids: list[int], session, cancel, progress) -> Prefilled: ...

    def block_length(self, remaining: int) -> int: ...

    def denoise_block(self, cache, block: int, length: int, prompt_tail: list[int], cancel,
                      given: BlockFill | None = None) -> Generator[Any, Any, BlockOutcome]:
        """Yields `Step`s and, for each decoder pass, a `DenoiseCall` (engine.generation.forward) to which the
        pass's logits are sent back. `given`: a fill template's fixed positions in this block, which start
        settled and never change."""
        ...

    def fill_layout(self) -> tuple[int, bool, int | None]:
        """(positions per block, whether blocks have that fixed size, the id padding a short last block)."""
        ...

    def commit(self, cache, ids: list[int]) -> None: ...

    def final_commit(self, outcome: BlockOutcome, emitted: list[int]) -> list[int]:
        """What of the last block enters the cache for the next turn of a conversation."""
        ...


def run(denoiser: Denoiser, prompt_ids: list[int], max_tokens: int, stops: frozenset[int], tokenizer, cancel,
        session, progress=None, fill: FillCanvas | None = None) -> Generator:
    """The event stream of one generation (see engine.events for its order), with the denoiser's
    `DenoiseCall`s among the events for the caller to answer (engine.generation.forward). With `fill`, the answer is that
    template (engine.generation.fill_run): its blocks come from the template and it ends once filled.
    `progress(done, total)` hears of each encoder pass of a long prompt."""
    filling = FillRun(fill, denoiser, stops, tokenizer) if fill is not None else None
    text = TextAssembler(tokenizer) if filling is None else FillText(filling)
    clock = Clock()
    prompt_tokens = len(prompt_ids)
    if filling is not None:
        prompt_ids = filling.encoder_prompt(prompt_ids)
    try:
        if session is not None:
            with session.writing_cache():
                prefilled = denoiser.prefill(prompt_ids, session, cancel, progress)
            # Recorded at once, so a generation that fails later still leaves the session consistent.
            session.remember(prefilled.cache, prefilled.cached_ids, denoiser.family, prefilled.images)
        else:
            prefilled = denoiser.prefill(prompt_ids, None, cancel, progress)
    except Cancelled:
        # Cancelled while a long prompt was being encoded (the session forgot its half-written cache).
        clock.prefill_s = time.perf_counter() - clock.start
        yield Started(prompt_tokens=prompt_tokens, encoded_tokens=0, prefill_s=clock.prefill_s,
                      block_length=denoiser.block_length(max_tokens))
        yield from closing_events(text, "cancelled", [], clock, [], [], prompt_tokens)
        return
    cache, cached_ids = prefilled.cache, list(prefilled.cached_ids)
    clock.prefill_s = time.perf_counter() - clock.start
    first_fill = filling.block(0, len(prompt_ids) - len(cached_ids)) if filling is not None else None
    yield Started(prompt_tokens=prompt_tokens, encoded_tokens=prefilled.encoded_tokens, prefill_s=clock.prefill_s,
                  block_length=first_fill[0] if first_fill else denoiser.block_length(max_tokens))

    emitted: list[int] = []
    steps_per_block: list[int] = []
    lengths: list[int] = []
    finish_reason = None
    block = 0
    while True:
        prompt_tail = prompt_ids[len(cached_ids):] if len(cached_ids) < len(prompt_ids) else []
        given = None
        if filling is None:
            length = denoiser.block_length(max_tokens - len(emitted))
        else:
            length, given = first_fill if block == 0 else filling.block(block, len(prompt_tail))
        began = time.perf_counter()
        accepted: list[int] = []
        outcome = yield from _noting_accepted(
            denoiser.denoise_block(cache, block, length, prompt_tail, cancel, given), accepted)
        clock.denoise_s += time.perf_counter() - began
        steps_per_block.append(outcome.steps)
        lengths.append(length)
        if outcome.stop_reason == "cancelled":
            finish_reason = "cancelled"
            yield cancelled_block(block, outcome.steps, accepted)
            break
        if filling is None:
            tokens, finish_reason = emit_block(outcome.ids[len(prompt_tail):], stops, max_tokens - len(emitted),
                                               include_stop=denoiser.includes_stop)
            block_tokens = tokens
        else:
            tokens, finish_reason = filling.emit(block, outcome.ids[len(prompt_tail):])
            block_tokens = tokens[filling.lead:] if block == 0 else tokens  # the lead is in the cache already
        emitted += tokens
        content_delta, reasoning_delta = text.feed(tokens)
        yield BlockCommitted(block=block, token_ids=tuple(tokens), committed=tuple(outcome.ids),
                             content_delta=content_delta, reasoning_delta=reasoning_delta, steps=outcome.steps,
                             stop_reason=outcome.stop_reason, accepted_per_step=tuple(accepted),
                             edits=outcome.edits,
                             filled_spans=filling.spans(text.content) if filling is not None else ())
        if finish_reason is not None:
            if session is not None:
                tail = denoiser.final_commit(outcome, block_tokens)
                if tail:  # so the next turn can reuse the whole reply when it re-tokenizes the same way
                    denoiser.commit(cache, tail)
                    cached_ids += tail
            break
        denoiser.commit(cache, outcome.ids)
        cached_ids += outcome.ids
        block += 1

    if session is not None:
        session.remember(cache, cached_ids, denoiser.family, prefilled.images)
    yield from closing_events(text, finish_reason, emitted, clock, steps_per_block, lengths, prompt_tokens,
                              filling.spans if filling is not None else None)


def _noting_accepted(steps: Generator, accepted: list[int]):
    """Pass a block's `Step`s (and its `DenoiseCall`s, whose logits come back through `send`) on unchanged,
    noting how many positions each step accepted (for `BlockCommitted`)."""
    reply = None
    try:
        while True:
            try:
                item = steps.send(reply)
            except StopIteration as done:
                return done.value
            if isinstance(item, Step):
                accepted.append(item.newly_accepted)
            reply = yield item
    finally:
        steps.close()  # a consumer that stops early closes the denoiser too
