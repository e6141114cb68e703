"""Saved conversations: open, search (full text), start a new one, rename, delete and export to Markdown.

It opens with the search focused (typing searches at once; Down or Enter reach the list); each entry shows its
id (what `diffusion-chat replay ID` takes) and the model that last answered in it."""

from __future__ import annotations

from pathlib import Path
from typing import Awaitable, Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tui.store import ConversationStore, StoreError, export_file_name

from ..words import count
from .dialogs import ConfirmScreen, TextPromptScreen


NEW_CONVERSATION = 0   # what the screen dismisses with for "new" (SQLite ids start at 1)
NEW_OPTION_ID = "new"


class ConversationsScreen(ModalScreen[int | None]):
    """Dismisses with the id of the conversation to open, NEW_CONVERSATION, or None."""

    BINDINGS = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("ctrl+n", "dismiss(0)", "New"),
        Binding("down", "to_list", "List", show=False),
        Binding("ctrl+r", "rename", "Rename"),
        # Priority: the list opens on its search field, whose Input takes ctrl+d (delete right) and ctrl+e (end)
        # for itself (the Delete and End keys still do those there).
        Binding("ctrl+d", "delete", "Delete", priority=True),
        Binding("ctrl+e", "export", "Export", priority=True),
    ]

    class Renamed(Message):
        def __init__(self, conversation_id: int, title: str):
            super().__init__()
            self.conversation_id, self.title = conversation_id, title

    class Deleted(Message):
        def __init__(self, conversation_id: int):
            super().__init__()
            self.conversation_id = conversation_id

    def __init__(self, store: ConversationStore):
        super().__init__(classes="dialog-screen")
        self.store = store

    def compose(self) -> ComposeResult:
        with VerticalScroll(can_focus=False, classes="dialog", id="conversations"):
            yield Static("Conversations", classes="dialog-title")
            yield Input(placeholder="Search all messages and titles…", id="conversation-search")
            yield OptionList(id="conversation-list")
            yield Static("Type to search · Enter open · ctrl+n new · ctrl+r rename · ctrl+d delete · "
                         "ctrl+e export · Esc close", classes="dialog-hint")

    def on_mount(self) -> None:
        self.refresh_list()
        self.query_one("#conversation-search").focus()   # typing searches at once

    def action_to_list(self) -> None:
        option_list = self.query_one(OptionList)
        if self.focused is not option_list:
            option_list.focus()
            if option_list.option_count > 1 and option_list.highlighted == 0 and not self._search_text():
                option_list.highlighted = 1   # past "New conversation", to the most recent one

    def _search_text(self) -> str:
        return self.query_one("#conversation-search", Input).value.strip()

    def refresh_list(self) -> None:
        query = self.query_one("#conversation-search", Input).value.strip()
        try:
            if query:
                options, seen = [], set()
                for hit in self.store.search(query):
                    if hit.conversation_id not in seen:
                        seen.add(hit.conversation_id)
                        prompt = Content(f"{hit.conversation_title}\n  #{hit.conversation_id} · {hit.snippet}")
                        options.append(Option(prompt, id=str(hit.conversation_id)))
            else:
                options = [Option(Content("+ New conversation (ctrl+n)"), id=NEW_OPTION_ID)] + [
                    Option(Content(f"{c.title}\n  #{c.id} · {c.model} · {count(c.message_count, 'message')} · "
                                   f"{c.updated_at.astimezone():%Y-%m-%d %H:%M}"), id=str(c.id))
                    for c in self.store.list()
                ]
        except StoreError as exc:
            self.notify(str(exc), severity="error", markup=False)
            options = []
        option_list = self.query_one(OptionList)
        option_list.set_options(options)
        if options:
            option_list.highlighted = 1 if len(options) > 1 and not query else 0
        else:
            option_list.add_option(Option("No matching conversations." if query else "No saved conversations yet.",
                                          disabled=True))

    @on(Input.Changed, "#conversation-search")
    def _search_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.refresh_list()

    @on(Input.Submitted, "#conversation-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        """Enter in the search opens the highlighted entry (the best hit, or the most recent conversation)."""
        event.stop()
        option_list = self.query_one(OptionList)
        if option_list.highlighted is not None:
            self._open(option_list.get_option_at_index(option_list.highlighted).id)

    @on(OptionList.OptionSelected)
    def _opened(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._open(event.option.id)

    def _open(self, option_id: str | None) -> None:
        if option_id == NEW_OPTION_ID:
            self.dismiss(NEW_CONVERSATION)
        elif option_id is not None:
            self.dismiss(int(option_id))

    def _highlighted_id(self) -> int | None:
        option_list = self.query_one(OptionList)
        if option_list.highlighted is None:
            return None
        option = option_list.get_option_at_index(option_list.highlighted)
        return int(option.id) if option.id not in (None, NEW_OPTION_ID) else None

    def action_rename(self) -> None:
        conversation_id = self._highlighted_id()
        if conversation_id is not None:
            rename_conversation(self, self.store, conversation_id, self._renamed)

    def _renamed(self, conversation_id: int, title: str) -> None:
        self.post_message(self.Renamed(conversation_id, title))
        self.refresh_list()

    def action_delete(self) -> None:
        conversation_id = self._highlighted_id()
        if conversation_id is not None:
            delete_conversation(self, self.store, conversation_id, self._deleted)

    async def _deleted(self, conversation_id: int) -> None:
        self.post_message(self.Deleted(conversation_id))
        self.refresh_list()

    def action_export(self) -> None:
        conversation_id = self._highlighted_id()
        if conversation_id is not None:
            export_conversation(self, self.store, conversation_id)


# The dialogs behind rename, delete and export, shared by this screen and the app's commands (which act on
# the open conversation). Store errors end in a notice, never in a traceback.


def rename_conversation(screen: Screen, store: ConversationStore, conversation_id: int,
                        renamed: Callable[[int, str], None]) -> None:
    def rename(title: str | None) -> None:
        if not title:
            return
        try:
            store.rename(conversation_id, title)
        except StoreError as exc:
            screen.notify(str(exc), severity="error", markup=False)
            return
        renamed(conversation_id, title)

    try:
        current = store.get(conversation_id).title
    except StoreError as exc:
        screen.notify(str(exc), severity="error", markup=False)
        return
    screen.app.push_screen(TextPromptScreen("Rename conversation", current), rename)


def delete_conversation(screen: Screen, store: ConversationStore, conversation_id: int,
                        deleted: Callable[[int], Awaitable[None]]) -> None:
    async def delete(confirmed: bool) -> None:
        if not confirmed:
            return
        try:
            store.delete(conversation_id)
        except StoreError as exc:
            screen.notify(str(exc), severity="error", markup=False)
            return
        await deleted(conversation_id)

    try:
        title = store.get(conversation_id).title
    except StoreError as exc:
        screen.notify(str(exc), severity="error", markup=False)
        return
    screen.app.push_screen(ConfirmScreen(f"Delete “{title}”? This cannot be undone.", "Delete"), delete)


def export_conversation(screen: Screen, store: ConversationStore, conversation_id: int) -> None:
    """Ask where to write the conversation as Markdown (default: the current folder), then write it."""

    def write(target: str | None) -> None:
        if not target:
            return
        path = Path(target).expanduser()
        try:
            path.write_text(store.export_markdown(conversation_id), encoding="utf-8")
        except (OSError, StoreError) as exc:
            screen.notify(f"Export failed: {exc}", severity="error", markup=False)
            return
        screen.notify(f"Exported to {path}", markup=False)

    try:
        default = Path.cwd() / export_file_name(store.get(conversation_id).title, conversation_id)
    except StoreError as exc:
        screen.notify(str(exc), severity="error", markup=False)
        return
    screen.app.push_screen(TextPromptScreen("Export to Markdown file", str(default)), write)
