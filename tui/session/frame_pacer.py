"""When the live canvas may draw its next frame: a CPU budget for the UI thread, measured, not guessed.

Drawing a frame costs the UI thread milliseconds of CPU, which an engine computing on the same cores loses.
So the next frame waits until the UI thread's CPU time since the last drawn one (its compositing included)
is within UI_CPU_BUDGET of the time passed, but never longer than MAX_FRAME_INTERVAL_S; the first frame of
each block is drawn at once. A fast machine still gets a frame per timer tick (30 a second).
"""

from __future__ import annotations

FRAME_INTERVAL_S = 1 / 30
UI_CPU_BUDGET = 0.02
# 0.5 s rather than 0.25 s: on 2 cores the forced frames alone cost ~2-5 % of the engine's throughput
# (bench_ui: 0.3-4.8 % at 0.25 s, 1.4-1.5 % at 0.5 s).
MAX_FRAME_INTERVAL_S = 0.5
# Without new frames (slow steps, prefill) the elapsed time in the status bar still moves at this interval.
STATUS_INTERVAL_S = 1.0


class FramePacer:
    """`due(...)` says whether to draw now; `drawn(...)` records that a draw happened (wall and CPU clocks)."""

    def __init__(self, now: float = 0.0, cpu: float = 0.0):
        self.drawn_at, self.drawn_cpu = now, cpu

    def due(self, now: float, cpu: float, is_new: bool, first_of_block: bool) -> bool:
        if first_of_block:
            return True
        budget_wait = min(MAX_FRAME_INTERVAL_S, (cpu - self.drawn_cpu) / UI_CPU_BUDGET)
        wait = budget_wait if is_new else max(budget_wait, STATUS_INTERVAL_S)
        return now - self.drawn_at >= wait

    def drawn(self, now: float, cpu: float) -> None:
        self.drawn_at, self.drawn_cpu = now, cpu
