"""The open conversation and the moves along its saved tree, without Textual: which path is shown (branches
made by edits), which revision of an answer is current, the system prompt, thinking.

`ConversationState` is what the session knows of the open conversation; `Navigation` changes it through the
store and shows the result. The answer being written (tui/session/answer.py) is asked about, never touched.
"""

from __future__ import annotations

from typing import Callable

from ..records import Conversation, Message, Revision
from ..store import ConversationStore, StoreError
from .conversation_path import Place, engine_history, place_of, places
from .generation import Generation
from .view import ChatView


class ConversationState:
    """The open conversation: its saved path, the history the engine gets from it, its system prompt."""

    def __init__(self, *, think: bool, system_prompt: str | None):
        self.default_think = think
        self.default_system_prompt = prompt_text(system_prompt)   # for new conversations (`--system`)
        self.conversation_id: int | None = None
        self.think = think                       # thinking on for this conversation
        self.system_prompt = self.default_system_prompt
        self.messages: tuple[Message, ...] = ()  # the current path as saved, root first
        self.history: list[dict] = []            # what the engine gets: role/content of the saved turns
        self.last_answer = ""

    def load(self, conversation: Conversation) -> None:
        self.messages = conversation.messages
        self.history = engine_history(conversation.messages)
        answers = [m.content for m in conversation.messages if m.role == "assistant" and m.content]
        self.last_answer = answers[-1] if answers else ""

    def open(self, conversation: Conversation | None) -> None:
        """Another conversation (None: a new one, with this run's defaults)."""
        if conversation is None:
            self.conversation_id = None
            self.think, self.system_prompt = self.default_think, self.default_system_prompt
            self.messages, self.history, self.last_answer = (), [], ""
        else:
            self.conversation_id = conversation.id
            self.think, self.system_prompt = conversation.think, conversation.system_prompt
            self.load(conversation)


class Navigation:
    """Branches, revisions, the system prompt and thinking of the open conversation. `writing()` is the answer
    being written, if any (some moves wait for it)."""

    def __init__(self, store: ConversationStore, view: ChatView, state: ConversationState,
                 writing: Callable[[], Generation | None]):
        self.store, self.view, self.state, self.writing = store, view, state, writing

    async def switch_branch(self, message_id: int, delta: int) -> None:
        """Show the previous (-1) or next (+1) alternative of a user message: another edit sent at its place."""
        if self.writing() is not None:
            self.view.notify("An answer is being written: switch branches when it is done (Esc cancels it).",
                             "warning")
            return
        try:
            siblings = [sibling.id for sibling in self.store.siblings(message_id)]
            index = siblings.index(message_id) + delta
            if not 0 <= index < len(siblings):
                self.view.notify(f"Branch {index + 1 - delta} of {len(siblings)}: there is no other one that way.")
                return
            conversation = self.store.switch_branch(siblings[index])
            self.state.load(conversation)
            shown_places = places(self.store, conversation.messages)
        except StoreError as exc:
            self.view.notify(str(exc), "error")
            return
        await self.view.show_conversation(conversation, shown_places)
        self.view.focus_message(siblings[index])

    async def switch_revision(self, message_id: int, delta: int) -> None:
        """Show the previous (-1) or next (+1) revision of an answer."""
        try:
            number = self.store.get_message(message_id).revision or 1
        except StoreError as exc:
            self.view.notify(str(exc), "error")
            return
        await self.show_revision(message_id, number + delta)

    async def show_revision(self, message_id: int, number: int) -> None:
        """Show revision `number` of an answer; the next turn continues from it."""
        generation = self.writing()
        if generation is not None and generation.revision_of == message_id:
            self.view.notify("This answer is being written again; wait for it or press Esc.", "warning")
            return
        try:
            place = place_of(self.store, self.store.get_message(message_id))
            if not 1 <= number <= place.count:
                self.view.notify(f"Revision {place.number} of {place.count}: there is no other one that way.")
                return
            message = self.store.set_current_revision(message_id, number)
            self.state.load(self.store.get(self.state.conversation_id))
        except StoreError as exc:
            self.view.notify(str(exc), "error")
            return
        await self.view.show_answer(message, Place(message_id, number, place.count))

    def answer_revisions(self, message_id: int | None = None) -> tuple[Message, list[Revision]] | None:
        """An answer (the last one by default) and all its revisions, for comparing them; None, with a notice,
        when there is none."""
        answers = [m for m in self.state.messages if m.role == "assistant" and m.id == (message_id or m.id)]
        if not answers:
            self.view.notify("There is no answer to compare yet: regenerate one with ctrl+g.")
            return None
        try:
            return answers[-1], self.store.revisions(answers[-1].id)
        except StoreError as exc:
            self.view.notify(str(exc), "error")
            return None

    def set_system_prompt(self, text: str | None) -> None:
        """This conversation's system prompt (None or blank: none), used from the next request on."""
        text = prompt_text(text)
        if self.state.conversation_id is not None:
            try:
                self.store.set_system_prompt(self.state.conversation_id, text)
            except StoreError as exc:
                self.view.notify(str(exc), "error")
                return
        self.state.system_prompt = text
        self.view.show_system_prompt(text)
        self.view.notify("System prompt set for this conversation (from the next answer)." if text
                         else "System prompt removed from this conversation.")

    def renamed(self, conversation_id: int, title: str) -> None:
        if conversation_id == self.state.conversation_id:
            self.view.show_title(title)

    def toggle_thinking(self, model=None) -> None:
        """`model`: the loaded engine.ModelInfo, whose template may have no thinking channel."""
        self.state.think = not self.state.think
        if self.state.conversation_id is not None:
            try:
                self.store.set_think(self.state.conversation_id, self.state.think)
            except StoreError as exc:
                self.view.notify(str(exc), "error")
        self.view.show_thinking(self.state.think)
        if self.state.think and model is not None and not model.thinking:
            self.view.notify(f"Thinking on for this conversation, but {model.name} has no thinking channel: "
                             "it answers without reasoning.", "warning")
            return
        self.view.notify(f"Thinking {'on' if self.state.think else 'off'} for this conversation (from the next turn).")


def prompt_text(text: str | None) -> str | None:
    return text.strip() if text is not None and text.strip() else None
