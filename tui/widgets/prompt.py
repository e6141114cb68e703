"""The message input: Enter sends, Up/Down walk through earlier prompts, file paths complete with →."""

from __future__ import annotations

import os
from pathlib import Path

from textual.binding import Binding
from textual.suggester import Suggester
from textual.widgets import Input

IMAGE_COMMAND = "/image "


class PathSuggester(Suggester):
    """Completes a file-system path typed after `prefix` (the longest completion all matches share)."""

    def __init__(self, prefix: str = ""):
        # The file system changes under us, and paths are case-sensitive: no cache, no case folding.
        super().__init__(use_cache=False, case_sensitive=True)
        self.prefix = prefix

    async def get_suggestion(self, value: str) -> str | None:
        if not value.startswith(self.prefix):
            return None
        typed = value[len(self.prefix):]
        if not typed:
            return None
        path = Path(typed).expanduser()
        folder, stem = (path, "") if typed.endswith(os.sep) else (path.parent, path.name)
        try:
            names = sorted(
                entry.name + (os.sep if entry.is_dir() else "")
                for entry in os.scandir(folder)
                if entry.name.startswith(stem) and (stem.startswith(".") or not entry.name.startswith("."))
            )
        except OSError:
            return None
        completion = os.path.commonprefix(names)
        if len(completion) <= len(stem):
            return None
        return value + completion[len(stem):]


class PromptInput(Input):
    BINDINGS = [
        Binding("up", "history_previous", "Previous prompt", show=False),
        Binding("down", "history_next", "Next prompt", show=False),
    ]

    def __init__(self, **kwargs):
        super().__init__(suggester=PathSuggester(IMAGE_COMMAND), **kwargs)
        self.history: list[str] = []
        self._history_index = 0
        self._draft = ""

    def remember(self, text: str) -> None:
        """Add a sent prompt to the history (consecutive duplicates once) and reset the walk."""
        if text and (not self.history or self.history[-1] != text):
            self.history.append(text)
        self._history_index = len(self.history)

    def set_history(self, prompts: list[str]) -> None:
        self.history = []
        for prompt in prompts:
            self.remember(prompt)
        self._history_index = len(self.history)

    def action_history_previous(self) -> None:
        if self._history_index == 0:
            return
        if self._history_index == len(self.history):
            self._draft = self.value  # keep what was being typed, Down brings it back
        self._history_index -= 1
        self._show(self.history[self._history_index])

    def action_history_next(self) -> None:
        if self._history_index >= len(self.history):
            return
        self._history_index += 1
        at_end = self._history_index == len(self.history)
        self._show(self._draft if at_end else self.history[self._history_index])

    def _show(self, text: str) -> None:
        self.value = text
        self.cursor_position = len(text)
