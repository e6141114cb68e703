"""The prompt's token count against the model's context (`1,234 / 32,768 tokens`), next to the prompt."""

from __future__ import annotations

from textual.widgets import Static


class TokenCount(Static):
    """Shows what the screen counted; red (class `-over`) when the turn would not fit."""

    DEFAULT_CSS = """
    TokenCount {
        width: auto;
        min-width: 10;
        height: 3;
        padding: 1 1 0 1;
        color: $text-muted;
    }
    TokenCount.-over {
        color: $error;
        text-style: bold;
    }
    """

    def __init__(self, **kwargs):
        super().__init__("", markup=False, **kwargs)
        self.display = False  # until a model with a known context is loaded

    def show(self, tokens: int | None, context: int | None, over: bool = False) -> None:
        """`tokens` None: not counted (yet, or the count failed); `context` None: nothing to show."""
        self.display = context is not None
        if context is not None:
            self.update(f"{'?' if tokens is None else f'{tokens:,}'} / {context:,} tokens")
        self.set_class(over, "-over")
