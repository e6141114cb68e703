"""One line under the chat: model, family, thinking, the numbers of the running or last generation, and a
sparkline of the live block's accepted positions per step."""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Sparkline

from ..words import short_model_name


MODEL_MAX, MODEL_STUB = 28, 8   # columns for the model id: at most, and at least


class StatusText(Widget):
    """The text part; redrawn without a layout pass (it changes with every denoising step)."""

    DEFAULT_CSS = """
    StatusText {
        width: 1fr;
        height: 1;
    }
    """

    text = ""

    def render(self) -> Text:
        return Text(self.text, no_wrap=True, overflow="ellipsis")


class StatusBar(Horizontal):
    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text;
    }
    StatusBar > #live-steps {
        display: none;  /* while a block is denoised */
        width: 24;
        margin: 0 0 0 1;
    }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.text = ""
        self.model = "no model"
        self.family = ""
        self.thinking = False
        self.activity = "choose a model (ctrl+l)"
        self.live_steps: tuple[int, ...] = ()

    def compose(self) -> ComposeResult:
        yield StatusText()
        spark = Sparkline(id="live-steps")
        spark.tooltip = "positions accepted per step in the block being denoised"
        yield spark

    def on_mount(self) -> None:
        self._redraw()

    def set_model(self, name: str | None, family_label: str = "") -> None:
        # A long id (a server may report the model's path) would push the numbers off the line: shortened here,
        # in full in the tooltip.
        self.model = name or "no model"   # shortened to what the line leaves it (see _redraw)
        self.family = family_label.split(", ")[0] + ")" if "(remote, " in family_label else family_label
        self.tooltip = f"{name} · {family_label}" if name else None
        self._redraw()

    def set_thinking(self, on: bool) -> None:
        self.thinking = on
        self._redraw()

    def set_activity(self, text: str) -> None:
        self.activity = text
        self._redraw()

    def set_live_steps(self, accepted_per_step: Sequence[int]) -> None:
        """The live block's curve; empty hides it (the end of an answer). It stays shown from block to block:
        showing and hiding cost a layout pass each."""
        counts = tuple(accepted_per_step)
        if counts == self.live_steps:
            return
        self.live_steps = counts
        spark = self.query_one("#live-steps", Sparkline)
        spark.data = counts
        shown = bool(counts)
        if spark.display != shown:
            spark.display = shown
            self._redraw()   # the text's room changed

    def on_resize(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        thinking = "thinking on" if self.thinking else "thinking off"
        width = self.content_size.width - (25 if self.live_steps else 0) if self.is_mounted and self.size.width else 0
        rest = " │ ".join(part for part in (self.family, thinking, self.activity) if part)
        # The numbers matter most. The model id gives way first (down to a stub), then the family, which the model
        # implies (and the tooltip names): at 80 columns the live tok/s stays on the line.
        if width and self.family and MODEL_STUB + 3 + len(rest) > width:
            short = "remote" if "(remote" in self.family else ""   # where the answers come from stays said
            rest = " │ ".join(part for part in (short, thinking, self.activity) if part)
        # The model id gets what the line leaves (at least a stub).
        limit = max(MODEL_STUB, min(MODEL_MAX, width - len(rest) - 3)) if width else MODEL_MAX
        self.text = f"{short_model_name(self.model, limit)} │ {rest}"
        if self.is_mounted:
            status = self.query_one(StatusText)
            status.text = self.text
            status.refresh()
