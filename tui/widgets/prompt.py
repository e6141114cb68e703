"""The message input: several lines, Enter sends, shift+enter / ctrl+j start a new line, Up on the first line and
Down on the last walk through earlier prompts, Tab completes a slash command's name, and `/image PATH`
completes file paths (images first)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from textual import events
from textual.actions import SkipAction
from textual.binding import Binding
from textual.message import Message
from textual.suggester import Suggester
from textual.widgets import TextArea

from ..slash_commands import completion as command_completion
from ..slash_commands import typed_command_word

IMAGE_COMMAND = "/image "
SYSTEM_COMMAND = "/system"
FILL_COMMAND = "/fill"
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff"})


@dataclass(frozen=True)
class PathCompletion:
    completion: str               # what to add to the typed path ("" when nothing is certain)
    names: tuple[str, ...] = ()   # the matching entries: images first, then folders, then other files


def complete_path(typed: str) -> PathCompletion:
    """Complete a file-system path as far as its usable matches agree. Usable are images and folders (which
    may hold some); other files only when nothing else matches."""
    if not typed:
        return PathCompletion("")
    path = Path(typed).expanduser()
    folder, stem = (path, "") if typed.endswith(os.sep) else (path.parent, path.name)
    try:
        # The file system changes under us, and paths are case-sensitive: no cache, no case folding.
        entries = [(entry.name, entry.is_dir()) for entry in os.scandir(folder)
                   if entry.name.startswith(stem) and (stem.startswith(".") or not entry.name.startswith("."))]
    except OSError:
        return PathCompletion("")
    images = sorted(name for name, is_dir in entries if not is_dir and Path(name).suffix.lower() in IMAGE_SUFFIXES)
    folders = sorted(name + os.sep for name, is_dir in entries if is_dir)
    others = sorted(name for name, is_dir in entries if not is_dir and name not in images)
    common = os.path.commonprefix(images + folders or others)
    return PathCompletion(common[len(stem):] if len(common) > len(stem) else "", (*images, *folders, *others))


class PathSuggester(Suggester):
    """`complete_path` for an `Input` (the attach dialog), after `prefix`."""

    def __init__(self, prefix: str = ""):
        super().__init__(use_cache=False, case_sensitive=True)
        self.prefix = prefix

    async def get_suggestion(self, value: str) -> str | None:
        if not value.startswith(self.prefix):
            return None
        completion = complete_path(value[len(self.prefix):]).completion
        return value + completion if completion else None


class PromptInput(TextArea):
    """What the person types. Posts `Submitted` on Enter (the text is left in place: the screen clears it once
    it is sent) and `Completions` while a `/image` path is typed."""

    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        min-height: 3;
        max-height: 12;
    }
    """

    BINDINGS = [
        Binding("up", "history_previous", "Previous prompt", show=False),
        Binding("down", "history_next", "Next prompt", show=False),
        Binding("tab", "accept_completion", "Complete the path", show=False),
        # TextArea's delete-to-line-end and redo give way to the chat's compare (ctrl+k) and copy (ctrl+y):
        # this binding only hides TextArea's (see check_action), so the keys reach the screen, footer and all.
        Binding("ctrl+k,ctrl+y", "leave_to_screen", show=False),
    ]

    class Submitted(Message):
        def __init__(self, prompt: PromptInput, value: str):
            super().__init__()
            self.prompt, self.value = prompt, value

        @property
        def control(self) -> PromptInput:
            return self.prompt

    class Completions(Message):
        """The entries matching the `/image` path being typed (none: hide the list)."""

        def __init__(self, names: tuple[str, ...]):
            super().__init__()
            self.names = names

    def __init__(self, **kwargs):
        # Tab moves the focus (a prompt has no use for tab characters) unless it completes a path.
        super().__init__(soft_wrap=True, tab_behavior="focus", show_line_numbers=False, **kwargs)
        self.prompts: list[str] = []
        self._history_index = 0
        self._draft = ""
        self._completions: tuple[str, ...] = ()
        self.completes_paths = True   # off while the loaded model is text-only: no `/image` path to complete

    @property
    def value(self) -> str:
        return self.text

    @value.setter
    def value(self, text: str) -> None:
        """Replace the text and put the cursor at its end (as typing it would)."""
        self.load_text(text)
        self.move_cursor(self.document.end)  # (after load_text's own update_suggestion: see watch_selection)

    def watch_selection(self) -> None:
        # A completion belongs at the end of the text: it follows the cursor there and away.
        if self.is_mounted:
            self.update_suggestion()

    async def _on_key(self, event: events.Key) -> None:
        # TextArea's own handler (later in the MRO) would insert a newline for Enter; prevent_default stops it.
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self, self.text))
        elif event.key in ("shift+enter", "ctrl+j"):
            event.stop()
            event.prevent_default()
            start, end = self.selection
            self.replace("\n", start, end, maintain_selection_offset=False)

    def update_suggestion(self) -> None:
        """TextArea's hook after every edit and cursor move: complete `/image PATH` at the end of the text."""
        text = self.text
        completion = PathCompletion("")
        typing_a_path = text.startswith(IMAGE_COMMAND) and "\n" not in text and self.cursor_at_end_of_text
        if self.completes_paths and typing_a_path:
            completion = complete_path(text[len(IMAGE_COMMAND):])
        command_word = typed_command_word(text) if self.cursor_at_end_of_text else None
        self.suggestion = command_completion(command_word) if command_word else completion.completion
        if completion.names != self._completions:
            self._completions = completion.names
            self.post_message(self.Completions(completion.names))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action != "leave_to_screen" and super().check_action(action, parameters)

    def action_accept_completion(self) -> None:
        if not self.suggestion:
            raise SkipAction()  # tab moves the focus as usual
        self.insert(self.suggestion)

    # ---- history ----------------------------------------------------------------------------------------

    def remember(self, text: str) -> None:
        """Add a sent prompt to the history (consecutive duplicates once) and reset the walk."""
        if text and (not self.prompts or self.prompts[-1] != text):
            self.prompts.append(text)
        self._history_index = len(self.prompts)

    def set_history(self, prompts: list[str]) -> None:
        self.prompts = []
        for prompt in prompts:
            self.remember(prompt)
        self._history_index = len(self.prompts)

    def action_history_previous(self) -> None:
        # Only from the first visual line: elsewhere Up moves the cursor within the text.
        if not self.navigator.is_first_wrapped_line(self.cursor_location):
            self.action_cursor_up()
            return
        if self._history_index == 0:
            return
        if self._history_index == len(self.prompts):
            self._draft = self.text  # keep what was being typed, Down brings it back
        self._history_index -= 1
        self.value = self.prompts[self._history_index]

    def action_history_next(self) -> None:
        if not self.navigator.is_last_wrapped_line(self.cursor_location):
            self.action_cursor_down()
            return
        if self._history_index >= len(self.prompts):
            return
        self._history_index += 1
        at_end = self._history_index == len(self.prompts)
        self.value = self._draft if at_end else self.prompts[self._history_index]
