"""How counts and engine names are worded, by the headless CLI and the app alike (tui.words uses these):
`1 step` / `2 steps`, and `stable and confident` for the engine's `stable_and_confident`. Plain functions."""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`1 block`, `2 blocks`, `0 edits`."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def human(name: str) -> str:
    """An engine name (a stop reason, a sampler, a finish reason) as the app shows it."""
    return str(name).replace("_", " ")
