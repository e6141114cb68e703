"""The revisions of one answer side by side: the settings that differ and what each run cost — the loop for
tuning a sampler (change a setting, ctrl+g, compare). Plain data; `tui.screens.compare` shows it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .store import Revision

BARS = "▁▂▃▄▅▆▇█"
MISSING = "–"
CURVE_WIDTH = 20


@dataclass(frozen=True)
class Comparison:
    columns: list[str]                     # one per revision, oldest first
    rows: list[tuple[str, list[str]]]      # (what, one cell per revision)


def compare(revisions: Sequence[Revision], shown: int | None, defaults: Mapping[str, Any]) -> Comparison:
    """`shown` is the number of the revision the transcript shows; `defaults` what unset settings mean."""
    columns = [f"#{r.number}" + (" (shown)" if r.number == shown else "") for r in revisions]
    rows = _setting_rows(revisions, defaults)
    stats = [r.stats or {} for r in revisions]
    steps = [s.get("steps_per_block") for s in stats]
    accepted = [[count for block in s.get("accepted_per_step") or () for count in block] for s in stats]
    tallest = max((max(counts) for counts in accepted if counts), default=0)
    rows += [
        ("finish", [s.get("finish_reason") or r.status for s, r in zip(stats, revisions)]),
        ("tokens", [_number(s.get("generated_tokens")) for s in stats]),
        ("blocks", [str(len(b)) if b is not None else MISSING for b in steps]),
        ("steps", [f"{sum(b)} ({'+'.join(map(str, b))})" if b else MISSING for b in steps]),
        ("accepted/step", [f"{sum(c) / len(c):.2f}" if c else MISSING for c in accepted]),
        ("per step", [curve(c, tallest) if c else MISSING for c in accepted]),
        ("time", [f"{s['total_s']:.2f} s" if "total_s" in s else MISSING for s in stats]),
        ("tok/s", [f"{s['tokens_per_s']:.1f}" if "tokens_per_s" in s else MISSING for s in stats]),
        ("prompt", [_prompt(s) for s in stats]),
        ("answer", [_start_of(r.content) for r in revisions]),
    ]
    return Comparison(columns, rows)


def _setting_rows(revisions: Sequence[Revision], defaults: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    # A revision without recorded settings (made before they were saved) is shown as unknown, and is not
    # what makes a setting "differ".
    settings = [r.settings for r in revisions]
    names = sorted({name for s in settings if s for name, value in s.items() if value is not None})
    rows = []
    for name in names:
        cells = [_setting(s.get(name), defaults.get(name)) if s is not None else MISSING for s in settings]
        if len({cell for cell in cells if cell != MISSING}) > 1:
            rows.append((name, cells))
    return rows or [("settings", ["the same" if s is not None else MISSING for s in settings])]


def _setting(value: Any, default: Any) -> str:
    if value is not None:
        return str(value)
    return f"default ({default})" if default is not None else "default"


def curve(counts: Sequence[int], tallest: int, width: int = CURVE_WIDTH) -> str:
    """Accepted positions per step as bars on one scale (`tallest`) for every revision, so heights compare;
    more steps than `width` are bucketed, each bucket showing its largest step."""
    buckets = [counts[i * len(counts) // width:(i + 1) * len(counts) // width] for i in range(width)]
    values = [max(bucket) for bucket in buckets if bucket] if len(counts) > width else list(counts)
    top = max(tallest, 1)
    return "".join(BARS[min(round(value / top * (len(BARS) - 1)), len(BARS) - 1)] for value in values)


def _number(value: Any) -> str:
    return MISSING if value is None else str(value)


def _prompt(stats: Mapping[str, Any]) -> str:
    if "prompt_tokens" not in stats:
        return MISSING
    encoded = stats.get("encoded_tokens")
    return f"{stats['prompt_tokens']}" + (f" ({encoded} encoded)" if encoded is not None else "")


def _start_of(text: str, length: int = 20) -> str:
    line = " ".join(text.split())
    return line if len(line) <= length else line[: length - 1] + "…"
