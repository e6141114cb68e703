"""Positions accepted per denoising step of the live block, from the frames the UI happened to see."""

from __future__ import annotations

from engine.events import Step


class LiveSteps:
    """The live block's accepted-per-step curve (the status bar's sparkline).

    The UI sees only some steps: the newest frame in the backend's slot whenever it looks. Steps it missed
    share what the block's accepted count grew by since the last frame it saw, so the curve is right in sum
    and close in shape; the exact counts arrive with `BlockCommitted.accepted_per_step`.
    """

    def __init__(self):
        self.block: int | None = None
        self.counts: list[int] = []
        self._accepted = 0

    def see(self, step: Step) -> list[int]:
        if step.block != self.block:
            self.block, self.counts, self._accepted = step.block, [], 0
        if step.step < len(self.counts):
            return self.counts  # a step already counted
        accepted = int(step.accepted[step.prompt_positions:].sum())
        missed = step.step - len(self.counts)
        if missed:
            grown = max(accepted - self._accepted - step.newly_accepted, 0)
            share, extra = divmod(grown, missed)
            self.counts += [share + (index < extra) for index in range(missed)]
        self.counts.append(step.newly_accepted)
        self._accepted = accepted
        return self.counts
