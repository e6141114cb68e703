"""The live denoising canvas: every position of the block being generated, redrawn on each frame.

Accepted (settled) positions are drawn bright and bold, the rest dim; each position is coloured on a
scale from confident to unsure by the step's per-position entropy or confidence. Unsettled positions show
either the model's current candidate or what the canvas really holds (noise / mask), as the person chooses.
"""

from __future__ import annotations

import math
from typing import Callable, Literal

from rich.style import Style
from rich.text import Text
from textual.color import Color
from textual.widget import Widget

from engine.events import Step

CanvasMode = Literal["candidates", "noise"]
CANVAS_MODES: tuple[CanvasMode, ...] = ("candidates", "noise")

MASK_GLYPH = "░"
EMPTY_GLYPH = "·"
# Control characters would break the layout; show them as visible marks instead.
_VISIBLE = str.maketrans({"\n": "↵", "\r": "↵", "\t": "→"})


class TokenTexts:
    """What each token id looks like on the canvas, decoded once per id.

    The canvas is redrawn up to 30 times a second with the same few hundred ids, so decoding each id
    once and keeping the string is much cheaper than decoding every frame.
    """

    def __init__(self, token_text: Callable[[int], str]):
        self._token_text = token_text
        self._cache: dict[int, str] = {}

    def __call__(self, token_id: int) -> str:
        text = self._cache.get(token_id)
        if text is None:
            text = self._token_text(token_id).translate(_VISIBLE) or EMPTY_GLYPH
            self._cache[token_id] = text
        return text


def uncertainty(score: float, kind: str) -> float:
    """Map an entropy (nats, 0 = certain) or a confidence (probability, 1 = certain) to 0..1, 1 = unsure."""
    if not math.isfinite(score):
        return 1.0
    if kind == "entropy":
        return 1.0 - math.exp(-max(score, 0.0))
    return min(max(1.0 - score, 0.0), 1.0)


class DenoisingCanvas(Widget):
    """Shows one `engine.events.Step`; call `show` with each new frame and `clear` when the block commits."""

    COMPONENT_CLASSES = {
        "denoising-canvas--header",
        "denoising-canvas--confident",
        "denoising-canvas--unsure",
        "denoising-canvas--noise",
    }

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.step: Step | None = None
        self.token_texts: TokenTexts | None = None
        self.mode: CanvasMode = "candidates"
        self.total_blocks: int | None = None

    def show(self, step: Step, token_texts: TokenTexts, mode: CanvasMode, total_blocks: int | None) -> None:
        self.step, self.token_texts, self.mode, self.total_blocks = step, token_texts, mode, total_blocks
        self.display = True
        self.refresh(layout=True)

    def clear(self) -> None:
        self.step = None
        self.display = False

    def header_text(self) -> str:
        step = self.step
        if step is None:
            return ""
        block = f"block {step.block + 1}/{self.total_blocks}" if self.total_blocks else f"block {step.block + 1}"
        start = step.prompt_positions
        settled = int(step.accepted[start:].sum())
        return (
            f"{block} · step {step.step + 1}/{step.max_steps} · "
            f"accepted {settled}/{len(step.canvas) - start} (+{step.newly_accepted}) · showing {self.mode}"
        )

    def render(self) -> Text:
        step = self.step
        if step is None or self.token_texts is None:
            return Text()
        header_style = self.get_component_rich_style("denoising-canvas--header")
        confident = _color_of(self.get_component_rich_style("denoising-canvas--confident"))
        unsure = _color_of(self.get_component_rich_style("denoising-canvas--unsure"))
        noise_style = self.get_component_rich_style("denoising-canvas--noise")
        text = Text(self.header_text() + "\n", style=header_style, no_wrap=False)
        for position in range(step.prompt_positions, len(step.canvas)):
            accepted = bool(step.accepted[position])
            colour = confident.blend(unsure, uncertainty(float(step.scores[position]), step.score_kind))
            style = Style(color=colour.rich_color, bold=accepted, dim=not accepted)
            if accepted:
                text.append(self.token_texts(int(step.canvas[position])), style)
            elif self.mode == "candidates":
                text.append(self.token_texts(int(step.candidates[position])), style)
            elif step.noise_is_mask:
                text.append(MASK_GLYPH, noise_style)
            else:
                text.append(self.token_texts(int(step.canvas[position])), noise_style + Style(dim=True))
        return text


def _color_of(style: Style) -> Color:
    return Color.from_rich_color(style.color) if style.color is not None else Color(128, 128, 128)
