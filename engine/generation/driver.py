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
from ..models.chunking import Cancelled
from ..text import TextAssembler
from .common import Clock, cancelled_block, closing_events, emit_block


@dataclass
class Prefilled:
    """The prompt in the cache: what the cache holds, and how much of it this turn had to encode."""

    cache: Any
    cached_ids: list[int]            # ids the cache holds (a block-aligned family may hold fewer than the prompt)
    encoded_tokens: int              # prompt tokens run through the network this turn (not served by the session)
    images: list = field(default_factory=list)   # the prompt's image runs (engine.session.ImageRun)


@dataclass(frozen=True)
class BlockOutcome:
    ids: list[int]                   # the whole final block (prompt tail included, for a family that has one)
    steps: int
    stop_reason: StopReason


class Denoiser(Protocol):
    family: str
    includes_stop: bool              # whether the stop id is emitted as the last token (LLaDA-2) or not

    def prefill(self, prompt_ids: list[int], session, cancel, progress) -> Prefilled:
        """Raises `Cancelled` when `cancel` is set between two encoder passes; calls `progress(done, total)`
        after each pass of a long prompt but the last."""
        ...

    def block_length(self, remaining: int) -> int: ...

    def denoise_block(self, cache, block: int, length: int, prompt_tail: list[int],
                      cancel) -> Generator[Step, None, BlockOutcome]: ...

    def commit(self, cache, ids: list[int]) -> None: ...

    def final_commit(self, outcome: BlockOutcome, emitted: list[int]) -> list[int]:
        """What of the last block enters the cache for the next turn of a conversation."""
        ...


def run(denoiser: Denoiser, prompt_ids: list[int], max_tokens: int, stops: frozenset[int], tokenizer, cancel,
        session, progress=None) -> Generator:
    """The event stream of one generation (see engine.events for its order)."""
    text = TextAssembler(tokenizer)
    clock = Clock()
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
        yield Started(prompt_tokens=len(prompt_ids), encoded_tokens=0, prefill_s=clock.prefill_s,
                      block_length=denoiser.block_length(max_tokens))
        yield from closing_events(text, "cancelled", [], clock, [], [], len(prompt_ids))
        return
    cache, cached_ids = prefilled.cache, list(prefilled.cached_ids)
    clock.prefill_s = time.perf_counter() - clock.start
    yield Started(prompt_tokens=len(prompt_ids), encoded_tokens=prefilled.encoded_tokens,
                  prefill_s=clock.prefill_s, block_length=denoiser.block_length(max_tokens))

    emitted: list[int] = []
    steps_per_block: list[int] = []
    lengths: list[int] = []
    finish_reason = None
    block = 0
    while True:
        prompt_tail = prompt_ids[len(cached_ids):] if len(cached_ids) < len(prompt_ids) else []
        length = denoiser.block_length(max_tokens - len(emitted))
        began = time.perf_counter()
        accepted: list[int] = []
        outcome = yield from _noting_accepted(denoiser.denoise_block(cache, block, length, prompt_tail, cancel),
                                              accepted)
        clock.denoise_s += time.perf_counter() - began
        steps_per_block.append(outcome.steps)
        lengths.append(length)
        if outcome.stop_reason == "cancelled":
            finish_reason = "cancelled"
            yield cancelled_block(block, outcome.steps, accepted)
            break
        tokens, finish_reason = emit_block(outcome.ids[len(prompt_tail):], stops, max_tokens - len(emitted),
                                           include_stop=denoiser.includes_stop)
        emitted += tokens
        content_delta, reasoning_delta = text.feed(tokens)
        yield BlockCommitted(block=block, token_ids=tuple(tokens), committed=tuple(outcome.ids),
                             content_delta=content_delta, reasoning_delta=reasoning_delta, steps=outcome.steps,
                             stop_reason=outcome.stop_reason, accepted_per_step=tuple(accepted))
        if finish_reason is not None:
            if session is not None:
                tail = denoiser.final_commit(outcome, tokens)
                if tail:  # so the next turn can reuse the whole reply when it re-tokenizes the same way
                    denoiser.commit(cache, tail)
                    cached_ids += tail
            break
        denoiser.commit(cache, outcome.ids)
        cached_ids += outcome.ids
        block += 1

    if session is not None:
        session.remember(cache, cached_ids, denoiser.family, prefilled.images)
    yield from closing_events(text, finish_reason, emitted, clock, steps_per_block, lengths, len(prompt_ids))


def _noting_accepted(steps: Generator[Step, None, BlockOutcome], accepted: list[int]):
    """Pass a block's `Step`s on unchanged, noting how many positions each accepted (for `BlockCommitted`)."""
    try:
        while True:
            try:
                step = next(steps)
            except StopIteration as done:
                return done.value
            accepted.append(step.newly_accepted)
            yield step
    finally:
        steps.close()  # a consumer that stops early closes the denoiser too
