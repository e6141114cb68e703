"""Pieces both generation loops share: stop ids, emitting a block's tokens, timing and stats."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import mlx.core as mx

from ..events import BlockCommitted, Finished, Stats


def as_id_set(value) -> set[int]:
    if value is None:
        return set()
    if isinstance(value, int):
        return {value}
    return {int(v) for v in value if v is not None}


def stop_ids(*sources) -> frozenset[int]:
    """Union of every EOS id the checkpoint declares (config, generation config, tokenizer)."""
    ids: set[int] = set()
    for source in sources:
        ids |= as_id_set(source)
    return frozenset(ids)


def emit_block(block: Sequence[int], stops: frozenset[int], budget: int, include_stop: bool = False):
    """Tokens of a finished block, left to right, up to the first stop id or the remaining budget.

    Returns (emitted ids, finish reason or None when generation continues)."""
    emitted: list[int] = []
    for token in block:
        if len(emitted) >= budget:
            return emitted, "length"
        if int(token) in stops:
            if include_stop:
                emitted.append(int(token))
            return emitted, "stop"
        emitted.append(int(token))
    return emitted, ("length" if len(emitted) >= budget else None)


@dataclass
class Clock:
    """Wall-clock bookkeeping for one generation."""

    start: float = field(default_factory=time.perf_counter)
    prefill_s: float = 0.0
    denoise_s: float = 0.0

    def stats(self, steps_per_block: Iterable[int], block_lengths: Iterable[int], prompt_tokens: int,
              generated_tokens: int) -> Stats:
        steps = tuple(int(s) for s in steps_per_block)
        work = sum(s * length for s, length in zip(steps, block_lengths))
        return Stats(
            steps_per_block=steps,
            prompt_tokens=prompt_tokens,
            generated_tokens=generated_tokens,
            work_tokens=int(work),
            prefill_s=self.prefill_s,
            denoise_s=self.denoise_s,
            total_s=time.perf_counter() - self.start,
            peak_memory_bytes=int(mx.get_peak_memory()),
        )


def is_cancelled(cancel) -> bool:
    return cancel is not None and cancel.is_set()


def first_set(*values):
    """The first value that is not None (a setting, then the checkpoint's value, then the default)."""
    return next((v for v in values if v is not None), None)


def cancelled_block(block: int, steps: int, accepted_per_step: Sequence[int]) -> BlockCommitted:
    return BlockCommitted(block=block, token_ids=(), committed=(), content_delta="", reasoning_delta="",
                          steps=steps, stop_reason="cancelled", accepted_per_step=tuple(accepted_per_step))


def closing_events(text, finish_reason: str, emitted: Sequence[int], clock: Clock,
                   steps_per_block: Sequence[int], block_lengths: Sequence[int], prompt_tokens: int,
                   filled_spans=None):
    """The one `Finished` event, carrying the text held back for a possible marker as its tails (and, for a
    fill, `filled_spans(content)`: where the holes' fillings lie in the final text)."""
    content_tail, reasoning_tail = text.finish()
    yield Finished(
        finish_reason=finish_reason,
        token_ids=tuple(emitted),
        content=text.content,
        reasoning=text.reasoning,
        stats=clock.stats(steps_per_block, block_lengths, prompt_tokens, len(emitted)),
        content_tail=content_tail,
        reasoning_tail=reasoning_tail,
        filled_spans=filled_spans(text.content) if filled_spans is not None else (),
    )
