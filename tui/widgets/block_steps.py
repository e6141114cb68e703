"""Under an answer: one small sparkline per committed block, of how many positions each denoising step
accepted — where the sampler settled the block at once, and where it struggled — and, for LLaDA-2.1 token
editing, how many positions the block re-wrote ("3 edits").

One widget draws them all with Textual's sparkline renderable, wrapping onto more lines when there are many:
a block commits while the engine computes, and mounting a widget per block would cost a layout pass each.
"""

from __future__ import annotations

from typing import Sequence

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.renderables.sparkline import Sparkline
from textual.widget import Widget

from ..records import Message
from ..words import count

# Wider sparklines only stretch the same few bars.
MAX_SPARK_WIDTH = 16
GAP = 3


def spark_width(counts: Sequence[int]) -> int:
    return min(max(len(counts), 2), MAX_SPARK_WIDTH)


def edits_text(edits: int) -> str:
    return f" {count(edits, 'edit')}" if edits else ""


def cell_width(block: int, counts: Sequence[int], edits: int = 0) -> int:
    return len(str(block + 1)) + 1 + spark_width(counts) + len(edits_text(edits)) + GAP


class _Row:
    """One line of (block number, sparkline) cells."""

    def __init__(self, cells: list[tuple[int, tuple[int, ...]]], number: Style, low: Style, high: Style,
                 edits: Sequence[int]):
        self.cells, self.number, self.low, self.high, self.edits = cells, number, low, high, edits

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for block, counts in self.cells:
            yield Segment(f"{block + 1} ", self.number)
            # Sparkline scales from the data's own minimum: equal counts would all draw as its lowest bar,
            # which reads as "nothing accepted". One value draws full bars across the width instead.
            data = counts[:1] if len(set(counts)) == 1 and counts[0] > 0 else counts
            line = Sparkline(data, width=spark_width(counts), min_color=self.low.color, max_color=self.high.color)
            yield from (segment for segment in console.render(line, options) if segment.text != "\n")
            edits = self.edits[block] if block < len(self.edits) else 0
            if edits:
                yield Segment(edits_text(edits), self.number)
            yield Segment(" " * GAP)
        yield Segment.line()


class BlockSteps(Widget):
    DEFAULT_CSS = """
    BlockSteps {
        display: none;  /* until a block commits */
        height: auto;
        margin: 0 1;
        padding: 0 1;
    }
    BlockSteps > .block-steps--number {
        color: $text-muted;
    }
    BlockSteps > .block-steps--low {
        color: $primary 30%;
    }
    BlockSteps > .block-steps--high {
        color: $primary;
    }
    """

    COMPONENT_CLASSES = {"block-steps--number", "block-steps--low", "block-steps--high"}

    def __init__(self, blocks: Sequence[Sequence[int]] = (), edits: Sequence[int] = (), *, id: str | None = None):
        super().__init__(id=id)
        self._blocks = [(block, tuple(counts)) for block, counts in enumerate(blocks) if counts]
        self.edits: list[int] = list(edits)   # per block (LLaDA-2.1 editing)
        self._rows = 0

    @property
    def blocks(self) -> list[tuple[int, ...]]:
        return [counts for _, counts in self._blocks]

    def on_mount(self) -> None:
        self.display = bool(self._blocks)
        self._set_tooltip()

    def add(self, block: int, accepted_per_step: Sequence[int], edits: int = 0) -> None:
        if not accepted_per_step:
            return
        self._blocks.append((block, tuple(accepted_per_step)))
        self.edits += [0] * (block + 1 - len(self.edits))
        self.edits[block] = edits
        self._update()

    def set_blocks(self, blocks: Sequence[Sequence[int]], edits: Sequence[int] = ()) -> None:
        """Show the blocks of a saved answer (replacing whatever was shown)."""
        self._blocks = [(block, tuple(counts)) for block, counts in enumerate(blocks) if counts]
        self.edits = list(edits)
        self._update()

    def edits_of(self, block: int) -> int:
        return self.edits[block] if block < len(self.edits) else 0

    def _update(self) -> None:
        shown = bool(self._blocks)
        if self.display != shown:
            self.display = shown  # (a layout pass, only when it changes)
        else:
            # A layout pass only when the blocks need another line.
            self.refresh(layout=len(self._lay_out(self._width())) != self._rows)
        self._set_tooltip()

    def _set_tooltip(self) -> None:
        self.tooltip = "\n".join(f"block {block + 1}: {count(len(counts), 'step')}, accepted per step "
                                 + " ".join(map(str, counts)) + (f",{edits_text(self.edits_of(block))}"
                                                                 if self.edits_of(block) else "")
                                 for block, counts in self._blocks) or None

    def _width(self) -> int:
        width = self.content_size.width
        return width if width > 0 else 80

    def _lay_out(self, width: int) -> list[list[tuple[int, tuple[int, ...]]]]:
        rows: list[list[tuple[int, tuple[int, ...]]]] = []
        used = width
        for block, counts in self._blocks:
            needed = cell_width(block, counts, self.edits_of(block))
            if used + needed > width and (not rows or rows[-1]):
                rows.append([])
                used = 0
            rows[-1].append((block, counts))
            used += needed
        return rows

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        self._rows = len(self._lay_out(width))
        return self._rows

    def render(self) -> Group:
        number, low, high = (self.get_component_rich_style(name) for name in
                             ("block-steps--number", "block-steps--low", "block-steps--high"))
        return Group(*(_Row(cells, number, low, high, self.edits) for cells in self._lay_out(self._width())))


def shown_blocks(message: Message) -> list[list[int]]:
    """A saved answer's per-block accepted counts, without a cancelled last block (it entered no text)."""
    blocks = list((message.stats or {}).get("accepted_per_step") or ())
    if message.status == "cancelled" and blocks:
        blocks = blocks[:-1]
    return blocks


def shown_edits(message: Message) -> list[int]:
    """A saved answer's LLaDA-2.1 edits per block (none saved: none made)."""
    return [int(count) for count in (message.stats or {}).get("edits_per_block") or ()]
