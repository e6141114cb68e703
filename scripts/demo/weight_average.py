"""An exponential moving average of a network's parameters, for the trainer's exported checkpoint (`--ema`).

The demos answer small talk with one of two fixed lines, chosen at the sampler's first step from the prompt
alone; with batches of a few dozen turns that choice swings from one checkpoint to the next (the LLaDA-2
fine-tune's first-step thanks accuracy on its own training templates went 40, 60, 30, 25, 45 % at steps 50 to
250: scripts/demo/first_step_probe.py). Averaging the weights over the last ~1 / (1 - decay) steps keeps what the
batches agree on. The optimizer keeps training the raw weights; only the export (and its evaluation) reads the
average.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch


class WeightAverage:
    def __init__(self, model: torch.nn.Module, decay: float):
        if not 0.0 < decay < 1.0:
            raise ValueError(f"the average's decay must lie in (0, 1), not {decay}")
        self.decay = decay
        named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
        self.names = [name for name, _ in named]
        self.parameters = [p for _, p in named]
        self.average = [p.detach().clone() for p in self.parameters]
        self.updates = 0

    def current_decay(self) -> float:
        """Short at first (the start is the loaded or random weights, not worth remembering long), then `decay`."""
        return min(self.decay, (1 + self.updates) / (10 + self.updates))

    @torch.no_grad()
    def update(self) -> None:
        weight = 1.0 - self.current_decay()
        torch._foreach_lerp_(self.average, [p.detach() for p in self.parameters], weight)
        self.updates += 1

    @contextmanager
    def applied(self):
        """The network holds the average inside the block, its own weights again after it."""
        with torch.no_grad():
            own = [p.detach().clone() for p in self.parameters]
            for parameter, average in zip(self.parameters, self.average):
                parameter.copy_(average)
        try:
            yield
        finally:
            with torch.no_grad():
                for parameter, saved in zip(self.parameters, own):
                    parameter.copy_(saved)

    def state_dict(self) -> dict:
        """{"decay", "updates", "average": {parameter name: averaged tensor}}."""
        return {"decay": self.decay, "updates": self.updates,
                "average": {name: a.cpu() for name, a in zip(self.names, self.average)}}

    def load_state_dict(self, state: dict) -> None:
        if list(state["average"]) != self.names:
            raise ValueError("the saved average is of another network")
        for mine, name in zip(self.average, self.names):
            mine.copy_(state["average"][name])
        self.updates = state["updates"]
