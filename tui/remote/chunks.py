"""Reading a chat completion stream, chunk by chunk, into the engine's events — for any OpenAI-compatible
server. Pure: the HTTP side is tui.remote.backend.

Text is taken as it comes (these servers send one chunk per committed block); reasoning from
`delta.reasoning_content`, else `delta.reasoning` (mlx-vlm sends both, kept equal; Ollama and newer vLLM only
the second). From `diffusion-chat serve` the extensions of engine.serve.wire add frames, the block numbers and
the engine's own stats; from other servers the blocks are counted by chunk and the stats are the wall clock
and the usage chunk's token counts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from engine.serve import wire
from engine.events import BlockCommitted, Finished, Started, Stats, Step

from .errors import error_text

# OpenAI finish reasons -> the engine's; anything that is not an ending the engine knows is an error.
FINISH_REASONS = {"stop": "stop", "length": "length", "eos": "stop", "end_turn": "stop", "cancelled": "cancelled"}
# Endings that are failures: mlxcel reports a failed generation as "error" (with no message), SGLang an
# aborted one as "abort".
ENDINGS = {"error": "the server reported an error (it sent no details)", "abort": "the server aborted the answer"}


# What one answer may hold in the app, whatever the server sends: its text, and its blocks (one sparkline each).
MAX_ANSWER_CHARS = 1 << 22
MAX_BLOCKS = wire.MAX_BLOCKS


class StreamError(Exception):
    """The server reported an error in the stream, or the stream broke its own format (one line)."""


@dataclass
class ChunkReader:
    """Feed each decoded `data:` payload; collect the engine events it means. `on_frame(step, texts)` gets
    the frames (they go to a slot, not to the event stream)."""

    on_frame: Callable[[Step, dict[int, str]], None] = lambda step, texts: None
    clock: Callable[[], float] = time.monotonic
    started_at: float = field(default=0.0)
    content: str = ""
    reasoning: str = ""
    blocks: int = 0
    finish_reason: str | None = None
    stats: Stats | None = None
    engine_finish: str | None = None
    usage: dict = field(default_factory=dict)
    extended: bool = False           # the server sends engine.serve.wire's extensions (diffusion-chat serve)
    content_tail: str = ""           # text after the last block (diffusion-chat serve's held-back tail)
    reasoning_tail: str = ""

    def __post_init__(self):
        self.started_at = self.clock()

    def feed(self, payload: Any) -> list:
        """The events this chunk means (Started, BlockCommitted); raises StreamError for an error chunk."""
        message = error_text(payload)
        if message is not None:
            raise StreamError(message)
        if not isinstance(payload, dict):
            raise StreamError(f"the server sent a chunk that is not an object: {str(payload)[:80]}")
        try:
            return self._read(payload)
        except wire.WireError as exc:
            raise StreamError(str(exc)) from None

    def _read(self, payload: dict) -> list:
        events = []
        if isinstance(payload.get("usage"), dict):
            self.usage = payload["usage"]
        if wire.FRAME_KEY in payload:
            self.on_frame(*wire.decode_frame(payload[wire.FRAME_KEY]))
        self.extended = self.extended or any(key in payload for key in (wire.STARTED_KEY, wire.BLOCK_KEY))
        if wire.STARTED_KEY in payload:
            events.append(wire.decode_started(payload[wire.STARTED_KEY]))
        if wire.STATS_KEY in payload:
            self.stats, self.engine_finish = wire.decode_stats(payload[wire.STATS_KEY])
        choices = payload.get("choices") or []
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
        content = delta.get("content") or ""
        reasoning = delta.get("reasoning_content") or delta.get("reasoning") or ""
        if not isinstance(content, str) or not isinstance(reasoning, str):
            raise StreamError("the server sent a delta whose text is not a string")
        if wire.BLOCK_KEY in payload:
            events.append(wire.decode_block(payload[wire.BLOCK_KEY], content, reasoning))
        elif self.extended:
            # Text that is no block: the tail the engine held back until the end (Finished.content_tail).
            self.content_tail += content
            self.reasoning_tail += reasoning
        elif content or reasoning:
            # Another server: each chunk of text is one committed block.
            events.append(BlockCommitted(block=self.blocks, token_ids=(), committed=(), content_delta=content,
                                         reasoning_delta=reasoning, steps=0, stop_reason="all_positions_revealed"))
        for event in events:
            if isinstance(event, BlockCommitted):
                self.content += event.content_delta
                self.reasoning += event.reasoning_delta
                self.blocks = max(self.blocks, event.block + 1)
        if self.blocks > MAX_BLOCKS:
            raise StreamError(f"the server sent more than {MAX_BLOCKS} blocks for one answer")
        if sum(map(len, (self.content, self.reasoning, self.content_tail, self.reasoning_tail))) > MAX_ANSWER_CHARS:
            raise StreamError(f"the server's answer is over {MAX_ANSWER_CHARS >> 20} M characters")
        reason = choice.get("finish_reason")
        if reason:
            if reason not in FINISH_REASONS:
                raise StreamError(ENDINGS.get(reason, f"the server ended the answer with finish_reason {reason!r}"))
            self.finish_reason = FINISH_REASONS[reason]
        return [e for e in events if isinstance(e, (Started, BlockCommitted))]

    def finished(self, cancelled: bool = False) -> Finished:
        """The closing event: after the finish chunk (or at a cancel, with what was committed so far)."""
        reason = "cancelled" if cancelled else (self.engine_finish or self.finish_reason or "stop")
        stats = self.stats or self._wall_clock_stats()
        return Finished(finish_reason=reason, token_ids=(), content=self.content + self.content_tail,
                        reasoning=self.reasoning + self.reasoning_tail, stats=stats, content_tail=self.content_tail,
                        reasoning_tail=self.reasoning_tail)

    def _wall_clock_stats(self) -> Stats:
        elapsed = self.clock() - self.started_at
        return Stats(steps_per_block=(0,) * self.blocks, prompt_tokens=_count(self.usage.get("prompt_tokens")),
                     generated_tokens=_count(self.usage.get("completion_tokens")), work_tokens=0,
                     prefill_s=0.0, denoise_s=0.0, total_s=elapsed, peak_memory_bytes=0)


def _count(value) -> int:
    """A usage count as reported, or 0 when it is no sane count."""
    try:
        return wire.whole(value, "a usage count")
    except wire.WireError:
        return 0
