"""`stop` sequences, applied to the answer text as blocks are committed: the text is cut before the first stop
string, and what could still become one (a block ending in "Obs" when "Observation:" is a stop) is held back
until the next block says. Plain Python."""

from __future__ import annotations

from typing import Sequence


class StopScanner:
    """Feed it each committed piece of answer text; it returns what may be sent now. Once a stop string shows up,
    `stopped` is set and nothing more comes out."""

    def __init__(self, stops: Sequence[str]):
        self.stops = tuple(stops)
        self.stopped = False
        self._held = ""

    def feed(self, text: str) -> str:
        if self.stopped or not self.stops:
            return "" if self.stopped else text
        buffer = self._held + text
        found = [at for at in (buffer.find(stop) for stop in self.stops) if at >= 0]
        if found:
            self.stopped, self._held = True, ""
            return buffer[:min(found)]
        keep = max((n for stop in self.stops for n in range(1, len(stop)) if buffer.endswith(stop[:n])), default=0)
        self._held = buffer[len(buffer) - keep:] if keep else ""
        return buffer[:len(buffer) - keep]

    def flush(self) -> str:
        """The answer ended: what was held back was no stop string after all."""
        held, self._held = self._held, ""
        return "" if self.stopped else held


def cut(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """`text` up to its first stop string, and whether one was there."""
    scanner = StopScanner(stops)
    kept = scanner.feed(text)
    return kept + scanner.flush(), scanner.stopped
