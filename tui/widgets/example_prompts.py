"""Example prompts under the empty chat's welcome text: the loaded demo's own, measured to be answered right.

Clicking one (or Tab to it and Enter) sends it. Focus shows as a reversed bar, visible in every theme.
"""

from __future__ import annotations

from typing import Sequence

from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static


class ExamplePrompt(Static, can_focus=True):
    DEFAULT_CSS = """
    ExamplePrompt {
        width: auto;
        padding: 0 1;
        color: $text-accent;
    }
    ExamplePrompt:hover {
        background: $boost;
        text-style: underline;
    }
    ExamplePrompt:focus {
        background: $accent;
        color: $text;
        text-style: bold;
    }
    """
    BINDINGS = [Binding("enter", "choose", "Send this prompt", show=False)]

    def __init__(self, text: str):
        super().__init__(f"› {text}", markup=False)
        self.text = text

    def on_click(self) -> None:
        self.action_choose()

    def action_choose(self) -> None:
        self.post_message(ExamplePrompts.Chosen(self.text))


class ExamplePrompts(Vertical):
    DEFAULT_CSS = """
    ExamplePrompts {
        height: auto;
        margin: 1 0 0 0;
    }
    ExamplePrompts > .examples-title {
        color: $text-muted;
    }
    """

    class Chosen(Message):
        def __init__(self, text: str):
            super().__init__()
            self.text = text

    def __init__(self, prompts: Sequence[str]):
        super().__init__(id="examples")
        self.prompts = tuple(prompts)
        self.display = bool(self.prompts)

    def compose(self):
        yield Static("Try one of these (click, or Tab to it and press Enter to send it):", classes="examples-title",
                     markup=False)
        for text in self.prompts:
            yield ExamplePrompt(text)
