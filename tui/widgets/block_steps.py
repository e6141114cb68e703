"""Under an answer: one small sparkline per committed block, of how many positions each denoising step
accepted — where the sampler settled the block at once, and where it struggled."""

from __future__ import annotations

from typing import Sequence

from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Sparkline, Static

from ..store import Message

# Wider sparklines only stretch the same few bars.
MAX_SPARK_WIDTH = 16


class BlockSpark(Horizontal):
    DEFAULT_CSS = """
    BlockSpark {
        height: 1;
        width: auto;
        margin: 0 2 0 0;
    }
    BlockSpark > .block-number {
        width: auto;
        color: $text-muted;
        margin: 0 1 0 0;
    }
    BlockSpark > Sparkline {
        height: 1;
    }
    """

    def __init__(self, block: int, accepted_per_step: Sequence[int]):
        super().__init__()
        self.block = block
        self.accepted_per_step = tuple(accepted_per_step)
        steps = len(self.accepted_per_step)
        self.tooltip = (f"block {block + 1}: {steps} step{'s' * (steps != 1)}, accepted per step "
                        + " ".join(map(str, self.accepted_per_step)))

    def compose(self):
        yield Static(f"{self.block + 1}", classes="block-number", markup=False)
        counts = self.accepted_per_step
        # Sparkline scales from the data's own minimum: equal counts would all draw as its lowest bar, which
        # reads as "nothing accepted". One value draws full bars across the width instead.
        spark = Sparkline(counts[:1] if len(set(counts)) == 1 and counts[0] > 0 else counts)
        spark.styles.width = min(max(len(self.accepted_per_step), 2), MAX_SPARK_WIDTH)
        yield spark


class BlockSteps(Widget):
    """The answer's blocks in order, wrapping onto more lines when there are many."""

    DEFAULT_CSS = """
    BlockSteps {
        display: none;  /* until a block commits */
        layout: grid;
        grid-size: 6;
        grid-rows: 1;
        height: auto;
        margin: 0 1;
        padding: 0 1;
    }
    """

    def __init__(self, blocks: Sequence[Sequence[int]] = (), *, id: str | None = None):
        super().__init__(id=id)
        self._initial = [(block, counts) for block, counts in enumerate(blocks) if counts]

    def compose(self):
        for block, counts in self._initial:
            yield BlockSpark(block, counts)

    def on_mount(self) -> None:
        self.display = bool(self._initial)

    def add(self, block: int, accepted_per_step: Sequence[int]) -> None:
        if not accepted_per_step:
            return
        self.mount(BlockSpark(block, accepted_per_step))
        self.display = True

    def set_blocks(self, blocks: Sequence[Sequence[int]]) -> None:
        """Show the blocks of a saved answer (replacing whatever was shown)."""
        self.remove_children()
        self.display = False
        for block, counts in enumerate(blocks):
            self.add(block, counts)

    @property
    def blocks(self) -> list[tuple[int, ...]]:
        return [spark.accepted_per_step for spark in self.query(BlockSpark)]


def shown_blocks(message: Message) -> list[list[int]]:
    """A saved answer's per-block accepted counts, without a cancelled last block (it entered no text)."""
    blocks = list((message.stats or {}).get("accepted_per_step") or ())
    if message.status == "cancelled" and blocks:
        blocks = blocks[:-1]
    return blocks
