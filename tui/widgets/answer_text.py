"""An answer's text as plain text with marked spans: a fill's fillings highlighted (`FilledText`), and revise
mode's selection over a finished answer (`SpanSelector`).

Both draw the source text character for character (`exact`: every character stays one character, controls
as their pictures), so a span of the source is a span on screen, and a mouse selection's offsets (Textual's
(column, line) within the text) map back to the source exactly. Markdown rendering could not promise that.
"""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.binding import Binding
from textual.message import Message as TextualMessage
from textual.selection import Selection
from textual.widget import Widget

from .printable import exact


def offset_of(text: str, line: int, column: int) -> int:
    """The character index of (line, column) in `text`, whose lines are split at \\n only (see `exact`)."""
    lines = text.split("\n")
    line = min(max(line, 0), len(lines) - 1)
    return sum(len(before) + 1 for before in lines[:line]) + min(max(column, 0), len(lines[line]))


class FilledText(Widget):
    """The answer as plain text, its filled spans highlighted (a `/fill` answer or a revised span)."""

    DEFAULT_CSS = """
    FilledText {
        height: auto;
        padding: 0 1;
    }
    FilledText > .filled-text--filled {
        color: $text-accent;
        background: $accent 20%;
        text-style: bold;
    }
    """

    COMPONENT_CLASSES = {"filled-text--filled"}

    def __init__(self, text: str = "", spans: Sequence[tuple[int, int]] = (), *, id: str | None = None):
        super().__init__(id=id)
        self.text, self.spans = text, tuple(spans)

    def show(self, text: str, spans: Sequence[tuple[int, int]]) -> None:
        self.text, self.spans = text, tuple(spans)
        self.refresh(layout=True)

    def marks(self) -> list[tuple[int, int, str]]:
        """(start, end, component class) of what to mark."""
        return [(a, b, "filled-text--filled") for a, b in self.spans if b > a]

    def render(self) -> Text:
        text = Text(exact(self.text), end="")
        for start, end, name in self.marks():
            text.stylize(self.get_component_rich_style(name), start, end)
        return text


class SpanSelector(FilledText, can_focus=True):
    """Revise mode on a finished answer: choose a span with the keys (or a mouse drag), Enter or `r` asks for
    it to be denoised again (`Revise`), Esc leaves (`Left`)."""

    DEFAULT_CSS = """
    SpanSelector {
        border-left: outer $warning;
    }
    SpanSelector > .span-selector--selected {
        background: $warning 50%;
        text-style: bold;
    }
    SpanSelector > .span-selector--cursor {
        text-style: reverse;
    }
    """

    COMPONENT_CLASSES = {"span-selector--selected", "span-selector--cursor"}

    BINDINGS = [
        Binding("left", "move(-1)", "Left", show=False),
        Binding("right", "move(1)", "Right", show=False),
        Binding("shift+left", "move(-1, True)", "Extend left", show=False),
        Binding("shift+right", "move(1, True)", "Extend right", show=False),
        Binding("ctrl+left,alt+left", "word(-1)", "Word left", show=False),
        Binding("ctrl+right,alt+right", "word(1)", "Word right", show=False),
        Binding("ctrl+shift+left,alt+shift+left", "word(-1, True)", "Extend a word left", show=False),
        Binding("ctrl+shift+right,alt+shift+right", "word(1, True)", "Extend a word right", show=False),
        Binding("home", "edge(-1)", "Start", show=False),
        Binding("end", "edge(1)", "End", show=False),
        Binding("enter,r", "revise", "Re-denoise the span"),
        Binding("escape", "leave", "Leave revise mode"),
    ]

    class Revise(TextualMessage):
        def __init__(self, message_id: int, start: int, end: int):
            super().__init__()
            self.message_id, self.start, self.end = message_id, start, end

    class Left(TextualMessage):
        """Revise mode ended without revising."""

    def __init__(self, text: str, message_id: int, *, id: str | None = None):
        super().__init__(text, id=id)
        self.message_id = message_id
        self.cursor = 0
        self.anchor: int | None = None   # the other end of the selection while one is being extended

    @property
    def span(self) -> tuple[int, int] | None:
        """The selected characters (start, end), or None when nothing is selected."""
        if self.anchor is None or self.anchor == self.cursor:
            return None
        return min(self.anchor, self.cursor), max(self.anchor, self.cursor)

    def marks(self) -> list[tuple[int, int, str]]:
        span = self.span
        if span is not None:
            return [(*span, "span-selector--selected")]
        return [(self.cursor, self.cursor + 1, "span-selector--cursor")] if self.text else []

    def select(self, start: int, end: int) -> None:
        """Select characters `start:end` (clipped to the text); the cursor goes to the end."""
        start, end = (min(max(value, 0), len(self.text)) for value in (start, end))
        self.anchor, self.cursor = start, end
        self.refresh()

    def _go(self, position: int, extend: bool) -> None:
        if extend and self.anchor is None:
            self.anchor = self.cursor
        elif not extend:
            self.anchor = None
        self.cursor = min(max(position, 0), len(self.text) if extend else max(len(self.text) - 1, 0))
        self.refresh()

    def action_move(self, delta: int, extend: bool = False) -> None:
        self._go(self.cursor + delta, extend)

    def action_word(self, delta: int, extend: bool = False) -> None:
        text, position = self.text, self.cursor
        if delta > 0:
            while position < len(text) and not text[position].isspace():
                position += 1
            while position < len(text) and text[position].isspace():
                position += 1
        else:
            while position > 0 and text[position - 1].isspace():
                position -= 1
            while position > 0 and not text[position - 1].isspace():
                position -= 1
        self._go(position, extend)

    def action_edge(self, delta: int) -> None:
        self._go(0 if delta < 0 else len(self.text), False)

    def action_revise(self) -> None:
        span = self.span
        if span is None:
            self.notify("Select the span to write again first: shift+← / shift+→ (or drag with the mouse).", markup=False)
            return
        self.post_message(self.Revise(self.message_id, *span))

    def action_leave(self) -> None:
        self.post_message(self.Left())

    def selection_updated(self, selection: Selection | None) -> None:
        """A mouse drag over the text (where the terminal reports one) becomes the span."""
        super().selection_updated(selection)
        if selection is None:
            return
        shown = exact(self.text)
        start = 0 if selection.start is None else offset_of(shown, selection.start.y, selection.start.x)
        end = len(shown) if selection.end is None else offset_of(shown, selection.end.y, selection.end.x)
        if end > start:
            self.select(start, end)
