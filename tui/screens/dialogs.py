"""Small modal dialogs: ask for one line of text, or for a yes/no confirmation."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.suggester import Suggester
from textual.widgets import Button, Input, Static


class TextPromptScreen(ModalScreen[str | None]):
    """Ask for one line; dismisses with the text (stripped), or None on Esc or when left empty (unless
    `allow_empty`: then "" means "none")."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, title: str, value: str = "", placeholder: str = "", suggester: Suggester | None = None,
                 hint: str = "", allow_empty: bool = False):
        super().__init__(classes="dialog-screen")
        self.allow_empty = allow_empty
        self.title_text = title
        self.value = value
        self.placeholder = placeholder
        self.suggester = suggester
        self.hint = hint

    def compose(self) -> ComposeResult:
        with VerticalScroll(can_focus=False, classes="dialog"):
            yield Static(self.title_text, classes="dialog-title", markup=False)
            yield Input(self.value, placeholder=self.placeholder, suggester=self.suggester, id="dialog-input")
            if self.hint:
                yield Static(self.hint, classes="dialog-hint", markup=False)

    @on(Input.Submitted, "#dialog-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        self.dismiss(text if text or self.allow_empty else None)


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("escape", "dismiss(False)", "Cancel"), Binding("y", "dismiss(True)", "Yes", show=False)]

    def __init__(self, question: str, confirm_label: str = "Yes"):
        super().__init__(classes="dialog-screen")
        self.question = question
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with VerticalScroll(can_focus=False, classes="dialog"):
            yield Static(self.question, classes="dialog-title", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.confirm_label, variant="error", id="confirm")
                yield Button("Cancel", id="cancel")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm")
