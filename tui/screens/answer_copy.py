"""The chat screen's copying (`ChatScreen` delegates to it): the focused or last answer, its next code block, its
reasoning, and a mouse selection in the transcript, each to the clipboard with a one-line notice."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..widgets.messages import AssistantMessage

if TYPE_CHECKING:
    from .chat import ChatScreen


class AnswerCopy:
    def __init__(self, screen: "ChatScreen"):
        self.screen = screen

    def copy(self, text: str, what: str) -> None:
        self.screen.app.copy_to_clipboard(text)
        self.screen.notify(f"Copied {what} to the clipboard.")

    def answer(self) -> None:
        focused = self.screen.focused
        text = focused.content if isinstance(focused, AssistantMessage) else self.screen.session.last_answer
        if not text:
            self.screen.notify("There is no answer to copy yet.")
            return
        self.copy(text, "the answer" if isinstance(focused, AssistantMessage) else "the last answer")

    def part(self, what: str) -> None:
        """`code` (the answer's next code block) or `reasoning`, of the focused (else the last) answer."""
        target = self.screen._target_answer()
        if target is None:
            self.screen.notify("There is no answer to copy code from yet." if what == "code"
                               else "There is no answer yet.")
        else:
            target.action_copy(what)

    def selection(self) -> None:
        """A mouse selection in the transcript is copied as soon as it is made (in revise mode it is the span
        to write again instead)."""
        if any(selector.text_selection is not None for selector in self.screen.query("SpanSelector")):
            return
        selected = self.screen.get_selected_text()
        if selected:
            self.copy(selected, f"the selection ({len(selected)} characters)")
