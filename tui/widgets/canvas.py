"""The live denoising canvas: every position of the block being generated, redrawn on each frame.

Accepted (settled) positions are drawn bright and bold, the rest dim; each position is coloured on a
scale from confident to unsure by the step's per-position entropy or confidence. Unsettled positions show
either the model's current candidate or what the canvas really holds (noise / mask), as the person chooses.
A fill's given text (`Step.fixed`) is drawn dim in the text colour, apart from the holes resolving around it;
positions LLaDA-2.1 re-wrote in this step (`Step.edited`) flash reversed in the accent colour for that frame.

A legend line under the header tells what the colours and the brightness mean. Header and legend wrap between
their phrases on a narrow canvas (80 columns), so nothing of either is cut off.

The canvas is redrawn up to 30 times a second while the engine computes on the same CPU, so it is cheap
by construction: it lays out its own lines (Textual's line API, no markup or text re-wrapping), colours
come from a small palette of levels, and it asks for a screen layout only when it needs more lines.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from engine.events import Step

from ..config import CanvasMode
from .printable import unbroken
from ..words import block_position


MASK_GLYPH = "░"
LEGEND_GLYPH = "█"
EMPTY_GLYPH = "·"
# Colour steps between confident and unsure; more are indistinguishable in a terminal.
LEVELS = 8


class TokenTexts:
    """What each token id looks like on the canvas, decoded once per id.

    The canvas is redrawn many times a second with the same few hundred ids, so decoding each id once and
    keeping the string (and its width in cells) is much cheaper than decoding every frame.
    """

    def __init__(self, token_text: Callable[[int], str]):
        self._token_text = token_text
        self._cache: dict[int, tuple[str, int]] = {}

    def __call__(self, token_id: int) -> tuple[str, int]:
        """(text, width in terminal cells)."""
        entry = self._cache.get(token_id)
        if entry is None:
            text = unbroken(self._token_text(token_id)) or EMPTY_GLYPH
            entry = self._cache[token_id] = (text, cell_len(text))
        return entry


def uncertainty_levels(scores: np.ndarray, kind: str) -> np.ndarray:
    """Per position 0 (certain) .. LEVELS-1 (unsure), from entropies (nats, 0 = certain) or confidences
    (probabilities, 1 = certain). Non-finite scores count as unsure."""
    scores = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=np.inf if kind == "entropy" else 0.0)
    unsure = 1.0 - np.exp(-np.maximum(scores, 0.0)) if kind == "entropy" else 1.0 - np.clip(scores, 0.0, 1.0)
    return np.rint(unsure * (LEVELS - 1)).astype(np.int64)


class DenoisingCanvas(Widget):
    """Shows one `engine.events.Step`: `show` each new frame, `clear` when its block commits, `hide` at the end."""

    DEFAULT_CSS = """
    DenoisingCanvas {
        display: none;  /* until the first frame of an answer */
        height: auto;
        margin: 0 1;
        padding: 0 1;
        background: $surface;
        border-left: outer $canvas-pending;
    }
    DenoisingCanvas > .denoising-canvas--header {
        color: $text-muted;
        text-style: italic;
    }
    DenoisingCanvas > .denoising-canvas--confident {
        color: $canvas-low-entropy;
    }
    DenoisingCanvas > .denoising-canvas--unsure {
        color: $canvas-high-entropy;
    }
    DenoisingCanvas > .denoising-canvas--noise {
        color: $canvas-noise;
    }
    DenoisingCanvas > .denoising-canvas--given {
        color: $foreground;
        text-style: dim italic;
    }
    DenoisingCanvas > .denoising-canvas--edited {
        color: $accent;
        text-style: bold reverse;
    }
    """

    COMPONENT_CLASSES = {
        "denoising-canvas--header",
        "denoising-canvas--confident",
        "denoising-canvas--unsure",
        "denoising-canvas--noise",
        "denoising-canvas--given",
        "denoising-canvas--edited",
    }

    def __init__(self, *, keep_height: bool = True, id: str | None = None, classes: str | None = None):
        """`keep_height`: live, the canvas keeps its tallest frame's height (see `_draw`); a replay, which
        jumps between frames at the person's pace, fits each one."""
        super().__init__(id=id, classes=classes)
        self.keep_height = keep_height
        self.step: Step | None = None
        self.token_texts: TokenTexts | None = None
        self.mode: CanvasMode = "candidates"
        self.total_blocks: int | None = None
        self.head_lines = 0        # how many of the laid-out lines are header and legend
        self.blocks_at_most = True   # live, the block count is a maximum; a replay knows the real one
        self._lines: list[Strip] = []
        self.note = ""             # shown instead of frames when none will come (a remote server)
        self._reserved_height = 0  # the most lines a frame of this answer needed: the canvas keeps that height
        self._palette_cache: tuple[str, tuple] | None = None   # (theme, palette): styles change with the theme
        self._legend_cache: tuple[tuple, Strip] | None = None

    def show(self, step: Step, token_texts: TokenTexts, mode: CanvasMode, total_blocks: int | None) -> None:
        self.step, self.token_texts, self.mode, self.total_blocks = step, token_texts, mode, total_blocks
        self._draw()

    def show_note(self, text: str) -> None:
        """No frames will come for this answer: say so where they would be drawn, until the answer ends."""
        self.note = text
        self.clear()
        self.display = True

    def clear(self) -> None:
        """The block committed: blank the canvas (or show its note) but keep its place for the next block."""
        self.step = None
        self._lines = [Strip([Segment(self.note, self._palette().header)])] if self.note else []
        self._reserved_height = max(self._reserved_height, len(self._lines))
        self.refresh()

    def hide(self) -> None:
        """The answer is complete."""
        self.step = None
        self._lines = []
        self.note = ""
        self._reserved_height = 0
        self.display = False

    def on_resize(self) -> None:
        if self.step is not None:
            self._draw()

    def header_text(self) -> str:
        step = self.step
        if step is None:
            return ""
        block = block_position(step.block, self.total_blocks, at_most=self.blocks_at_most)
        start = step.prompt_positions
        # A fill's given positions are settled from the start: the count is of the holes' positions.
        open_ = ~step.fixed[start:] if step.fixed is not None else np.ones(len(step.canvas) - start, bool)
        settled = int((step.accepted[start:] & open_).sum())
        given = len(open_) - int(open_.sum())
        edited = int(step.edited.sum()) if step.edited is not None else 0
        return (
            f"{block} · step {step.step + 1}/{step.max_steps} · "
            f"accepted {settled}/{int(open_.sum())} (+{step.newly_accepted})"
            + (f" · {given} given" if given else "") + (f" · {edited} edited" if edited else "")
            + f" · showing {self.mode}"
        )

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self._reserved_height

    def render_line(self, y: int) -> Strip:
        return self._lines[y] if y < len(self._lines) else Strip.blank(self.content_size.width, self.rich_style)

    def _width(self) -> int:
        # Known even while hidden (display: none widgets have no size of their own).
        parent = self.parent.content_size.width if self.parent is not None else 0
        return max(parent - self.styles.margin.width - self.styles.gutter.width, 8)

    def _draw(self) -> None:
        self._lines = self._lay_out(self._width())
        # A layout pass re-arranges (and redraws) the whole screen and costs far more than a frame: the canvas
        # keeps the height of its tallest frame (shorter ones leave blank lines) and asks for a layout only
        # when it grows.
        grown = len(self._lines) > self._reserved_height or (not self.keep_height
                                                             and len(self._lines) != self._reserved_height)
        self._reserved_height = max(self._reserved_height if self.keep_height else 0, len(self._lines))
        if not self.display:
            self.display = True  # (setting it, even to the same value, costs a layout pass)
        else:
            self.refresh(layout=grown)

    def _palette(self) -> Palette:
        """Styles per uncertainty level for accepted and pending positions, the noise, the header, a fill's
        given text and this step's edits."""
        theme = self.app.theme
        if self._palette_cache is None or self._palette_cache[0] != theme:
            self._palette_cache = (theme, self._make_palette())
        return self._palette_cache[1]

    def _make_palette(self) -> Palette:
        base = self.rich_style
        confident = _color_of(self.get_component_rich_style("denoising-canvas--confident"))
        unsure = _color_of(self.get_component_rich_style("denoising-canvas--unsure"))
        colours = [confident.blend(unsure, level / (LEVELS - 1)).rich_color for level in range(LEVELS)]
        accepted = [base + Style(color=colour, bold=True) for colour in colours]
        pending = [base + Style(color=colour, dim=True) for colour in colours]
        noise = base + self.get_component_rich_style("denoising-canvas--noise") + Style(dim=True)
        header = base + self.get_component_rich_style("denoising-canvas--header")
        given = base + self.get_component_rich_style("denoising-canvas--given")
        edited = base + self.get_component_rich_style("denoising-canvas--edited")
        return Palette(accepted, pending, noise, header, given, edited)

    def _legend(self, score_kind: str, width: int, given: bool, edits: bool) -> list[Strip]:
        """What the colours and brightness mean; the same for every frame of a theme, so kept."""
        key = (self.app.theme, score_kind, width, given, edits)
        if self._legend_cache is None or self._legend_cache[0] != key:
            palette = self._palette()
            style = palette.header
            scale = [Segment("certain ", style), *(Segment(LEGEND_GLYPH, level) for level in palette.accepted),
                     Segment(f" unsure (by {score_kind})", style)]
            phrases = [("", scale), (" · ", [Segment("bright", palette.accepted[0]), Segment(" accepted", style)]),
                       (", ", [Segment("dim", palette.pending[0]), Segment(" undecided", style)])]
            if given:
                phrases.append((", ", [Segment("given", palette.given), Segment(" fixed", style)]))
            if edits:
                phrases.append((", ", [Segment("edited", palette.edited)]))
            self._legend_cache = (key, packed(phrases, style, width))
        return self._legend_cache[1]

    def _lay_out(self, width: int) -> list[Strip]:
        """The header line, then every position's text, wrapped at token boundaries to `width` cells."""
        step, token_texts = self.step, self.token_texts
        palette = self._palette()
        accepted_styles, pending_styles, noise_style = palette.accepted, palette.pending, palette.noise
        header = self.header_text()
        given = step.fixed.tolist() if step.fixed is not None else None
        edited = step.edited.tolist() if step.edited is not None and step.edited.any() else None
        header_phrases = [("" if i == 0 else " · ", [Segment(phrase, palette.header)])
                          for i, phrase in enumerate(header.split(" · "))]
        lines = [*packed(header_phrases, palette.header, width),
                 *self._legend(step.score_kind, width, given is not None, edited is not None)]
        self.head_lines = len(lines)   # header and legend wrap on a narrow canvas: the positions start here
        levels = uncertainty_levels(step.scores, step.score_kind).tolist()
        accepted = step.accepted.tolist()
        canvas, candidates = step.canvas.tolist(), step.candidates.tolist()
        mask_width = cell_len(MASK_GLYPH)
        segments: list[Segment] = []
        used = 0
        for position in range(step.prompt_positions, len(canvas)):
            if given is not None and given[position]:
                text, cells = token_texts(canvas[position])
                style = palette.given
            elif accepted[position]:
                text, cells = token_texts(canvas[position])
                style = palette.edited if edited is not None and edited[position] else accepted_styles[levels[position]]
            elif self.mode == "candidates":
                text, cells = token_texts(candidates[position])
                style = pending_styles[levels[position]]
            elif step.noise_is_mask:
                text, cells, style = MASK_GLYPH, mask_width, noise_style
            else:
                text, cells = token_texts(canvas[position])
                style = noise_style
            if used + cells > width and segments:
                lines.append(Strip(segments, used))
                segments, used = [], 0
            if cells > width:  # a single token wider than the canvas
                text, cells = set_cell_size(text, width), width
            segments.append(Segment(text, style))
            used += cells
        if segments:
            lines.append(Strip(segments, used))
        return lines


def packed(phrases: list[tuple[str, list[Segment]]], style: Style, width: int) -> list[Strip]:
    """(separator, segments) phrases on as few lines as `width` allows: a phrase that does not fit starts the next
    line (without its separator); one wider than a whole line is cropped."""
    lines: list[Strip] = []
    line: list[Segment] = []
    used = 0
    for separator, segments in phrases:
        size = sum(cell_len(segment.text) for segment in segments)
        if line and used + len(separator) + size > width:
            lines.append(Strip(line).crop(0, width))
            line, used = [], 0
        if line:
            line.append(Segment(separator, style))
            used += len(separator)
        line += segments
        used += size
    if line:
        lines.append(Strip(line).crop(0, width))
    return lines


class Palette(NamedTuple):
    accepted: list[Style]      # per uncertainty level
    pending: list[Style]
    noise: Style
    header: Style
    given: Style               # a fill's given text
    edited: Style              # positions re-written this step


def _color_of(style: Style) -> Color:
    return Color.from_rich_color(style.color) if style.color is not None else Color(128, 128, 128)
