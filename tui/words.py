"""How the app, the CLI and the exports word counts and engine names, one way everywhere: `1 step` / `2 steps`,
`block 2 of ≤16` while the answer's length is open (a maximum) and `block 2 of 6` once it is known, and
`stable and confident` for the engine's `stable_and_confident`.

Plain functions, no Textual (unit-tested without it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# The two wordings the headless CLI shares with the app live with the CLI (engine.cli.words): one way everywhere.
from engine.cli.words import count, human  # noqa: F401


def block_position(index: int, total: int | None, *, at_most: bool) -> str:
    """Block `index` (0-based) of `total`: `block 2 of ≤16` while `total` is a maximum, `block 2 of 6` when it
    is the real count, `block 2` when unknown."""
    if not total:
        return f"block {index + 1}"
    return f"block {index + 1} of {'≤' if at_most else ''}{total}"


def short_model_name(name: str, limit: int = 28) -> str:
    """A model id short enough for the status bar: a path (mlx-vlm reports the folder) or a long Hub id keeps its
    last part, and what is still longer than `limit` loses its middle."""
    short = name
    cached = re.search(r"models--[^/]*?--([^/]+)/snapshots/", name)   # a Hugging Face cache folder
    if cached:
        short = cached.group(1)
    elif "/" in name and (len(name) > limit or name.startswith(("/", "~", "."))):
        short = name.rstrip("/").rsplit("/", 1)[-1] or name
    if len(short) > limit:
        keep = limit - 1
        short = short[: (keep + 1) // 2] + "…" + short[len(short) - keep // 2:]
    return short


def per_block(blocks: Sequence[Sequence[int]]) -> str:
    """Accepted positions per step, block by block: `b1 32 32 · b2 16 8 8`."""
    return " · ".join(f"b{number} " + " ".join(map(str, steps)) for number, steps in enumerate(blocks, 1))
