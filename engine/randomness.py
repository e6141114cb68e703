"""Every random draw of a generation goes through one small object.

Tests inject recorded draws (from the reference implementations) through the same two methods, so a
whole trajectory can be replayed token for token.

* `tokens(shape, block=b, step=s)`: uniform ids in [0, vocab). `step=-1` is the initial canvas of
  block b; `step=k` is the renoise draw of denoising step k (0-based).
* `categorical(logits, block=b, step=s)`: one sample per position from softmax(logits) (the proposals of
  step k). Never called when the temperature is 0.
"""

from __future__ import annotations

from typing import Protocol

import mlx.core as mx


class Randomness(Protocol):
    def tokens(self, shape: tuple[int, ...], *, block: int, step: int) -> mx.array: ...

    def categorical(self, logits: mx.array, *, block: int, step: int) -> mx.array: ...


class SeededRandomness:
    """The default: an explicit MLX PRNG key, split per draw, so runs with the same seed are identical
    and nothing depends on MLX's global random state."""

    def __init__(self, seed: int, vocab_size: int):
        self.vocab_size = int(vocab_size)
        self._key = mx.random.key(int(seed))

    def _next_key(self) -> mx.array:
        self._key, sub = mx.random.split(self._key)
        return sub

    def tokens(self, shape, *, block: int, step: int) -> mx.array:
        return mx.random.randint(0, self.vocab_size, shape, dtype=mx.int32, key=self._next_key())

    def categorical(self, logits: mx.array, *, block: int, step: int) -> mx.array:
        return mx.random.categorical(logits, axis=-1, key=self._next_key()).astype(mx.int32)
