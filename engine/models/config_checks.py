"""Sanity checks of config.json values, shared by both families: every refusal is one `CheckpointError` line
that names the field (`config.json: text_config.vocab_size is 1000000000000; ...`).

The bounds are far above every released checkpoint (the largest values seen are in the comments) and far
below what would overflow MLX's 32-bit shapes or ask for absurd amounts of memory while the module tree is
built; a value outside them is a broken or hostile config, not a bigger model.
"""

from __future__ import annotations

import math

from ..errors import CheckpointError

MAX_VOCAB = 2**24              # 16,777,216 ids (released: 157,184 LLaDA-2, 262,144 Gemma 4)
MAX_HIDDEN = 2**16             # 65,536 (released: 2,048-4,096; the largest dense models ~25k)
MAX_INTERMEDIATE = 2**20       # 1,048,576 (released: 704-9,216)
MAX_LAYERS = 1024              # (released: 20-32)
MAX_HEADS = 1024               # (released: 16-32)
MAX_HEAD_DIM = 4096            # (released: 128-512)
MAX_EXPERTS = 4096             # (released: 128-256)
MAX_POSITIONS = 2**24          # 16M positions (released: 32,768 LLaDA-2, 262,144 Gemma 4)
MAX_CANVAS = 2**16             # canvas / block positions (released: 256)


def integer(field: str, value, low: int, high: int) -> int:
    """`value` as an int in [low, high] (a JSON number without a fraction), else one line naming `field`."""
    exact = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if isinstance(value, bool) or not exact or not low <= int(value) <= high:
        raise CheckpointError(f"config.json: {field} is {_shown(value)}; expected an integer from {low:,} to {high:,}")
    return int(value)


def number(field: str, value, low: float, high: float, low_inclusive: bool = False) -> float:
    """`value` as a finite float in (low, high] (or [low, high]), else one line naming `field`."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and \
        (low <= value if low_inclusive else low < value) and value <= high
    if not ok:
        bracket = "[" if low_inclusive else "("
        raise CheckpointError(
            f"config.json: {field} is {_shown(value)}; expected a number in {bracket}{low:g}, {high:g}]")
    return float(value)


def flag(field: str, value) -> bool:
    if not isinstance(value, bool):
        raise CheckpointError(f"config.json: {field} is {_shown(value)}; expected true or false")
    return value


def divides(field: str, value: int, by_field: str, by: int) -> None:
    """Grouped-query attention needs the query heads to split evenly over the key/value heads."""
    if by % value:
        raise CheckpointError(f"config.json: {field} ({value}) must divide {by_field} ({by})")


def even(field: str, value: int) -> None:
    """RoPE rotates pairs of channels, so a rotated width must be even."""
    if value % 2:
        raise CheckpointError(f"config.json: {field} is {value}; RoPE needs an even number of channels")


def token_id(field: str, value, vocab_size: int) -> int:
    return integer(field, value, 0, vocab_size - 1)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
