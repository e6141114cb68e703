"""Every random draw of a generation goes through one small object, on the host (NumPy).

Tests and trajectory replays inject recorded draws through the same methods, so a whole trajectory can be
replayed token for token.

* `tokens(count, block=b, step=s)`: uniform ids in [0, vocab). `step=-1` is the initial canvas of block b;
  `step=k` is the renoise draw of denoising step k (0-based).
* `proposals(count, block=b, step=s)`: recorded proposals of step k, or None. When None the sampler draws
  them itself from softmax(logits) by inverse transform with `uniform(count, ...)` — exact, and with no
  vocabulary-wide transcendental pass beyond the softmax every step computes anyway.
* `uniform(count, block=b, step=s)`: floats in [0, 1), one per position.
* `sampled(ids, block=b, step=s)`: what the sampler drew from those uniforms (a recorder keeps it).

Draws live on the host: the same seed gives the same run on any backend, and drawing never needs a device
round trip.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Randomness(Protocol):
    def tokens(self, count: int, *, block: int, step: int) -> np.ndarray: ...

    def proposals(self, count: int, *, block: int, step: int) -> np.ndarray | None: ...

    def uniform(self, count: int, *, block: int, step: int) -> np.ndarray: ...

    def sampled(self, ids: np.ndarray, *, block: int, step: int) -> None: ...


class Draws:
    """What most randomness sources share: no recorded proposals, nothing to keep of what was sampled."""

    def proposals(self, count: int, *, block: int, step: int) -> np.ndarray | None:
        return None

    def sampled(self, ids: np.ndarray, *, block: int, step: int) -> None:
        return None


class SeededRandomness(Draws):
    """The default: one seeded generator, drawn from in the order the sampler asks, so runs with the same
    seed are identical and nothing depends on a global random state."""

    def __init__(self, seed: int, vocab_size: int):
        self.vocab_size = int(vocab_size)
        self._generator = np.random.Generator(np.random.PCG64(int(seed)))

    def tokens(self, count: int, *, block: int, step: int) -> np.ndarray:
        return self._generator.integers(0, self.vocab_size, count, dtype=np.int32)

    def uniform(self, count: int, *, block: int, step: int) -> np.ndarray:
        return self._generator.random(count, dtype=np.float32)
