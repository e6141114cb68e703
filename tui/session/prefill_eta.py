"""How long a long prompt's reading still takes, from the passes done so far (plain data, no Textual).

The encoder reads a long prompt in passes (engine.models.chunking); each pass attends to everything cached
before it, so a pass costs a + b · (tokens already read) and the whole read grows with the square of the
prompt. A straight line through the progress so far would promise too little; the estimate fits
t(d) = α·d + β·d²/2 (α, β ≥ 0: the time to have read d tokens) to the passes seen, by least squares, and
extrapolates it to the prompt's length. With a single pass seen it assumes the cost per token stays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class PrefillEstimate:
    points: list[tuple[int, float]] = field(default_factory=list)   # (tokens read, seconds since the start)
    total: int = 0

    def observe(self, done: int, total: int, elapsed: float) -> None:
        if done > 0 and elapsed > 0:
            self.points.append((done, elapsed))
            self.total = total

    def remaining_s(self) -> float | None:
        """Seconds left, or None before the first pass ended."""
        if not self.points:
            return None
        done, elapsed = self.points[-1]
        if len(self.points) == 1:
            return elapsed / done * (self.total - done)
        d = np.array([p[0] for p in self.points], float)
        t = np.array([p[1] for p in self.points], float)
        basis = np.stack([d, d * d / 2], axis=1)
        (alpha, beta), *_ = np.linalg.lstsq(basis, t, rcond=None)
        if alpha < 0 or beta < 0:   # noise: fall back to the one-parameter fits, whichever is non-negative
            alpha, beta = max(float(np.dot(d, t) / np.dot(d, d)), 0.0), 0.0
        finish = alpha * self.total + beta * self.total ** 2 / 2
        now = alpha * done + beta * done ** 2 / 2
        return max(finish - now, 0.0)


def eta_text(seconds: float | None) -> str:
    """`about 1 min 20 s left` (nothing before the first estimate)."""
    if seconds is None:
        return ""
    seconds = round(seconds)
    if seconds < 60:
        return f"about {max(seconds, 1)} s left"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"about {minutes} min {rest:02d} s left"
    return f"about {minutes // 60} h {minutes % 60:02d} min left"
