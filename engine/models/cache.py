"""Prefix KV cache shared by both families.

Every layer keeps the keys and values of *every* encoded position (no rotation), so a conversation can
be trimmed back to any common prefix for reuse on the next turn; sliding-window layers slice at read
time. `.keys` / `.values` are exactly the populated [1, kv_heads, T, head_dim] arrays.
"""

from __future__ import annotations

import copy

import mlx.core as mx


class LayerKV:
    def __init__(self):
        self.keys: mx.array | None = None
        self.values: mx.array | None = None

    @property
    def offset(self) -> int:
        return 0 if self.keys is None else self.keys.shape[2]

    @property
    def state(self):
        return self.keys, self.values

    def update(self, keys: mx.array, values: mx.array) -> tuple[mx.array, mx.array]:
        """Append and return the full keys/values."""
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = mx.concatenate([self.keys, keys], axis=2)
            self.values = mx.concatenate([self.values, values], axis=2)
        return self.keys, self.values

    def extended(self, keys: mx.array, values: mx.array) -> tuple[mx.array, mx.array]:
        """Full keys/values with `keys`/`values` appended, without storing them (denoising reads only)."""
        if self.keys is None:
            return keys, values
        return mx.concatenate([self.keys, keys], axis=2), mx.concatenate([self.values, values], axis=2)

    def copy(self) -> LayerKV:
        other = LayerKV()
        other.keys, other.values = self.keys, self.values
        return other

    def trim(self, length: int) -> None:
        if self.keys is not None:
            if length <= 0:
                self.keys = self.values = None
            else:
                self.keys, self.values = self.keys[:, :, :length], self.values[:, :, :length]


class PrefixCache(list):
    """One LayerKV per layer; `offset` is the number of tokens encoded so far."""

    def __init__(self, num_layers: int):
        super().__init__(LayerKV() for _ in range(num_layers))

    @property
    def offset(self) -> int:
        return self[0].offset if self else 0

    def trim(self, length: int) -> None:
        for layer in self:
            layer.trim(length)

    def copy(self) -> PrefixCache:
        """Another cache holding the same positions, for a second line of turns (a conversation under the other
        thinking setting). The arrays are shared: nothing writes into them in place (appending and trimming
        replace a layer's references), so trimming or extending one cache never changes the other."""
        other = copy.copy(self)   # keeps the subclass and its attributes (BlockCache's block_length)
        other[:] = [layer.copy() for layer in self]
        return other

    def arrays(self) -> list[mx.array]:
        return [a for layer in self for a in (layer.keys, layer.values) if a is not None]
