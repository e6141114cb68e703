"""One line under the chat: model, family, thinking, and the numbers of the running or last generation."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget


class StatusBar(Widget):
    """One fixed-height line; redrawn without a layout pass (it changes with every denoising step)."""

    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text;
    }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.text = ""
        self.model = "no model"
        self.family = ""
        self.thinking = False
        self.activity = "choose a model (ctrl+l)"

    def set_model(self, name: str | None, family_label: str = "") -> None:
        self.model, self.family = name or "no model", family_label
        self._redraw()

    def set_thinking(self, on: bool) -> None:
        self.thinking = on
        self._redraw()

    def set_activity(self, text: str) -> None:
        self.activity = text
        self._redraw()

    def show_generation(
        self, tokens_per_s: float, block_step: int, max_steps: int, accepted_per_step: float, elapsed_s: float
    ) -> None:
        self.set_activity(
            f"{tokens_per_s:.1f} tok/s │ step {block_step}/{max_steps} this block │ "
            f"{accepted_per_step:.1f} accepted/step │ {elapsed_s:.1f} s"
        )

    def _redraw(self) -> None:
        parts = [self.model]
        if self.family:
            parts.append(self.family)
        parts.append("thinking on" if self.thinking else "thinking off")
        parts.append(self.activity)
        self.text = " │ ".join(parts)
        self.refresh()

    def render(self) -> Text:
        return Text(self.text, no_wrap=True, overflow="ellipsis")
