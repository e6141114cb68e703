"""The bundled demo checkpoints and the real checkpoints the picker suggests (plain data, no Textual).

Each bundled demo folder (tui/demo/NAME) carries a `demo.json` written by scripts/demo/bundle.py from its own
measured evaluation: a title, a one-line summary of the tasks it answers, and three example prompts it answered
correctly. The picker lists the demos first; the empty chat offers the loaded demo's example prompts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

DEMO_ROOT = Path(__file__).resolve().parent / "demo"
# The first-run default, and the order the picker lists them in.
DEMO_NAMES = ("diffusion-gemma-demo", "llada2-demo")


@dataclass(frozen=True)
class DemoCard:
    path: Path
    title: str
    family: str
    summary: str
    examples: tuple[str, ...]


@dataclass(frozen=True)
class RealCheckpoint:
    hub_id: str
    size: str       # on disk
    memory: str     # to run it, roughly: the weights plus the cache and activations of a chat


# Sizes from the checkpoints' weight indexes (or parameter counts × bytes per weight); memory ≈ size + ~10 %.
REAL_CHECKPOINTS = (
    RealCheckpoint("mlx-community/diffusiongemma-26B-A4B-it-4bit", "16.5 GB", "≈ 18 GB"),
    RealCheckpoint("google/diffusiongemma-26B-A4B-it", "≈ 52 GB (bf16)", "≈ 56 GB"),
    RealCheckpoint("inclusionAI/LLaDA2.1-mini", "≈ 32.5 GB (bf16)", "≈ 35 GB"),
    RealCheckpoint("inclusionAI/LLaDA2.0-mini", "≈ 32.5 GB (bf16)", "≈ 35 GB"),
    RealCheckpoint("inclusionAI/LLaDA2.0-flash", "≈ 206 GB (bf16)", "≈ 220 GB"),
)


def demo_card(folder: str | Path) -> DemoCard | None:
    """The demo card of a checkpoint folder, or None when it is not a bundled demo (or its card is unreadable)."""
    path = Path(folder)
    try:
        data = json.loads((path / "demo.json").read_text(encoding="utf-8"))
        return DemoCard(path=path, title=str(data["title"]), family=str(data["family"]),
                        summary=str(data["summary"]), examples=tuple(str(e) for e in data.get("examples", ()))[:3])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def bundled_demos() -> list[DemoCard]:
    return [card for card in (demo_card(DEMO_ROOT / name) for name in DEMO_NAMES) if card is not None]


def default_demo() -> Path:
    """The checkpoint a first run opens: the DiffusionGemma demo."""
    return DEMO_ROOT / DEMO_NAMES[0]
