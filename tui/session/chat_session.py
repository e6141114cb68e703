"""The chat's turn logic, without Textual: one `ChatSession` per app, composed of small collaborators.

- `ConversationState` / `Navigation` (navigation.py): the open conversation's saved path, its branches and
  revisions, system prompt and thinking;
- `AnswerWriter` (answer.py): the answer being written, from the request to the saved message;
- the diffusion-only rules (diffusion_turns.py): `/fill`, revising a span, recorded denoising.

The session talks to a backend (the local engine thread or a remote server, see `view.Backend`) and to the
`ChatView` it is built with; the app changes the model, the backend and recording with `set_model`,
`set_backend` and `set_recording`. Everything the engine says arrives through `handle(...)` as the events of
`engine.events`; the store holds every turn (see `conversation_path` for what is derived from the saved path).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Sequence

from engine.errors import InputError
from engine.events import GenerationFailed, GenerationRequest, GenerationUpdate, ModelInfo
from engine.generation.fill import FillTemplate, parse_fill, revision_template
from engine.settings import Settings

from ..records import Message, Revision
from ..store import ConversationStore, StoreError
from . import diffusion_turns, prompt_budget
from .answer import AnswerWriter
from .conversation_path import engine_history, place_of, places, request_messages, title_from, user_turn
from .generation import FillKind, Generation
from .navigation import ConversationState, Navigation
from .view import Backend, ChatView


class ChatSession:
    def __init__(self, store: ConversationStore, backend: Backend, view: ChatView,
                 settings_for: Callable[[str], Settings], *, think: bool = False, system_prompt: str | None = None,
                 record: bool = False, clock: Callable[[], float] = time.monotonic,
                 cpu_clock: Callable[[], float] = time.thread_time):
        self.store, self.view, self.settings_for = store, view, settings_for
        self._backend = backend
        self._model: ModelInfo | None = None
        self._record = record   # requests ask the engine for the trajectory, saved with the answer
        self._loading: str | None = None   # what is loading, while a new model (or server) gets ready
        self.conversation = ConversationState(think=think, system_prompt=system_prompt)
        self.writer = AnswerWriter(store, view, self.conversation, clock=clock, cpu_clock=cpu_clock)
        self.navigation = Navigation(store, view, self.conversation, lambda: self.writer.generation)

    # ---- what the app changes -----------------------------------------------------------------------

    def set_model(self, model: ModelInfo | None) -> None:
        """The model the next turn is written with (None: none loaded, nothing can be sent)."""
        self._model = model

    def set_loading(self, what: str | None) -> None:
        """A new model is loading (`what`, e.g. "loading org/name…"): nothing is sent until it is ready or
        failed (None); the current model stays meanwhile."""
        self._loading = what

    def set_backend(self, backend: Backend) -> None:
        self._backend = backend

    def set_recording(self, on: bool) -> None:
        """Whether the next answers record their denoising."""
        self._record = on

    @property
    def model(self) -> ModelInfo | None:
        return self._model

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def record_trajectories(self) -> bool:
        return self._record

    # ---- the open conversation (read-only views of its state) ---------------------------------------------

    @property
    def conversation_id(self) -> int | None:
        return self.conversation.conversation_id

    @property
    def messages(self) -> tuple[Message, ...]:
        return self.conversation.messages

    @property
    def history(self) -> list[dict]:
        return self.conversation.history

    @property
    def think(self) -> bool:
        return self.conversation.think

    @property
    def system_prompt(self) -> str | None:
        return self.conversation.system_prompt

    @property
    def last_answer(self) -> str:
        return self.conversation.last_answer

    @property
    def generation(self) -> Generation | None:
        """The answer being written, if any."""
        return self.writer.generation

    # ---- sending ------------------------------------------------------------------------------------

    async def send(self, text: str, images: Sequence[str] = (), image_labels: Sequence[str] = (),
                   fill: FillTemplate | None = None) -> bool:
        """Save and show the user's turn and start the answer (`fill`: the answer is that template, see
        `send_fill`); False (with a notice) when it cannot be sent."""
        model = self._ready(images)
        if model is None:
            return False
        if not await self._fits_context(model, text, images):
            return False
        state = self.conversation
        try:
            if state.conversation_id is None:
                created = self.store.create(title_from(text), model.name, think=state.think,
                                            system_prompt=state.system_prompt)
                state.conversation_id = created.id
                self.view.show_title(created.title)
            message = self.store.add_message(state.conversation_id, "user", text, images=list(images))
            self._reload()
            place = place_of(self.store, message)
        except StoreError as exc:
            self.view.notify(str(exc), "error")
            return False
        await self.view.show_user(message, image_labels, place)
        self._start(model, await self.view.start_answer(None), self.history, fill=fill,
                    fill_kind="fill" if fill is not None else None)
        return True

    async def regenerate(self) -> bool:
        """Write the last answer again with the current settings, as a new revision of it (a last user message
        without an answer gets one). The prompt is the same, so the engine reuses its cache for it."""
        model = self._ready(())
        if model is None:
            return False
        if not self.messages:
            self.view.notify("There is no answer to regenerate yet.")
            return False
        last = self.messages[-1]
        if last.role == "assistant":
            revision_of, prompt = last.id, self.messages[:-1]
        else:
            revision_of, prompt = None, self.messages
        fill = diffusion_turns.refill(last, prompt)   # a filled template is filled again
        answer = await self.view.start_answer(revision_of)
        self._start(model, answer, engine_history(prompt), revision_of, fill, "fill" if fill is not None else None)
        return True

    async def resend(self, message_id: int, text: str, images: Sequence[str] = (),
                     image_labels: Sequence[str] = ()) -> bool:
        """Send an edited earlier user message: a new branch at its place (the old one and everything after it
        stay, reachable with `switch_branch`), answered from there."""
        model = self._ready(images)
        if model is None:
            return False
        original = next((m for m in self.messages if m.id == message_id and m.role == "user"), None)
        if original is None:
            self.view.notify("That message is no longer on this conversation's path.", "warning")
            return False
        try:
            message = self.store.add_message(self.conversation_id, "user", text, images=list(images),
                                             parent_id=original.parent_id)
            conversation = self._reload()
            before = conversation.messages[:-1]
            before_places, place = places(self.store, before), place_of(self.store, message)
        except StoreError as exc:
            self.view.notify(str(exc), "error")
            return False
        await self.view.show_conversation(dataclasses.replace(conversation, messages=before), before_places)
        await self.view.show_user(message, image_labels, place)
        self._start(model, await self.view.start_answer(None), self.history)
        return True

    async def send_fill(self, text: str) -> bool:
        """Send `text` (with `___` / `[...]` holes) as the user's turn, answered by the text with its holes
        filled; a text the template syntax refuses is one notice, and nothing is saved."""
        try:
            template = parse_fill(text)
        except InputError as exc:
            self.view.notify(f"Not sent: {exc}.", "error")
            return False
        refusal = diffusion_turns.remote_refusal(self.model, "Filling in a template")
        if refusal is not None:
            self.view.notify(refusal, "warning")
            return False
        return await self.send(text, fill=template)

    def can_revise(self, message_id: int) -> str | None:
        """Why the answer `message_id` cannot be revised now (None: it can). The view asks before revise mode."""
        return (diffusion_turns.remote_refusal(self.model, "Re-denoising a span")
                or diffusion_turns.revise_refusal(self.messages, message_id))

    async def revise(self, message_id: int, start: int, end: int) -> bool:
        """Denoise characters `start:end` of an answer on the path again, everything around them fixed; the
        result is a new revision of that answer. False, with a notice, when it cannot start."""
        model = self._ready(())
        if model is None:
            return False
        refusal = self.can_revise(message_id)
        if refusal is not None:
            self.view.notify(refusal, "warning")
            return False
        index = next(i for i, m in enumerate(self.messages) if m.id == message_id)
        try:
            template = revision_template(self.messages[index].content, start, end)
        except InputError as exc:
            self.view.notify(str(exc), "warning")
            return False
        answer = await self.view.start_answer(message_id)
        # The messages that produced the answer, and the same conversation key: the engine's cache serves them.
        self._start(model, answer, engine_history(self.messages[:index]), message_id, template, "revise")
        return True

    def _ready(self, images: Sequence[str]) -> ModelInfo | None:
        """The model, if a new answer can start now; else None, after one notice saying why."""
        model = self.model
        if self.generation is not None:
            self.view.notify("An answer is still being written; Esc cancels it.", "warning")
        elif self._loading is not None:
            self.view.notify(f"Wait until the model is ready ({self._loading}).", "warning")
        elif model is None:
            self.view.notify("No model is loaded: choose one with ctrl+l.", "warning")
        elif images and not model.supports_images:
            self.view.notify(f"{model.name} is text-only and cannot read images: remove the attachment chips first.",
                             "error")
        else:
            return model
        return None

    def _start(self, model: ModelInfo, answer: Any, history: Sequence[dict], revision_of: int | None = None,
               fill: FillTemplate | None = None, fill_kind: FillKind | None = None) -> None:
        # A template's answer has no thinking channel: that turn is asked without thinking.
        request = GenerationRequest(request_messages(self.system_prompt, history), self.settings_for(model.family),
                                    think=self.think and fill is None, conversation=self.conversation_id,
                                    fill=fill, record=self._record)
        self.writer.start(self._backend, model, request, answer, revision_of, fill_kind)

    def draft_messages(self, text: str, images: Sequence[str] = ()) -> list[dict]:
        """What the engine would get if `text` (and `images`) were sent now: the whole prompt with that turn."""
        return request_messages(self.system_prompt, [*self.history, user_turn(text, images)])

    def context_verdict(self, model: ModelInfo, prompt_tokens: int) -> str | None:
        return prompt_budget.verdict(model, self.settings_for(model.family), prompt_tokens)

    async def _fits_context(self, model: ModelInfo, text: str, images: Sequence[str]) -> bool:
        verdict = await prompt_budget.refusal(model, self.settings_for(model.family),
                                              self.draft_messages(text, images), self.think)
        if verdict is not None:
            self.view.notify(f"Not sent: {verdict}.", "error")
        return verdict is None

    def cancel(self) -> None:
        if self.generation is not None:
            self._backend.cancel(self.generation.job)
            self.view.show_activity("cancelling…")

    # ---- the answer being written -------------------------------------------------------------------

    def poll(self) -> None:
        """Called often while an answer is written (a frame timer): see `AnswerWriter.poll`."""
        self.writer.poll(self._backend)

    async def handle(self, event: GenerationUpdate | GenerationFailed) -> None:
        """An event of the backend, delivered on the UI's own thread."""
        await self.writer.handle(event)

    def recorded_trajectory(self, message_id: int) -> bytes | None:
        return diffusion_turns.recorded_trajectory(self.store, self.view, message_id)

    # ---- moving along the conversation ----------------------------------------------------------------

    async def switch_branch(self, message_id: int, delta: int) -> None:
        await self.navigation.switch_branch(message_id, delta)

    async def switch_revision(self, message_id: int, delta: int) -> None:
        await self.navigation.switch_revision(message_id, delta)

    async def show_revision(self, message_id: int, number: int) -> None:
        await self.navigation.show_revision(message_id, number)

    def answer_revisions(self, message_id: int | None = None) -> tuple[Message, list[Revision]] | None:
        return self.navigation.answer_revisions(message_id)

    def set_system_prompt(self, text: str | None) -> None:
        self.navigation.set_system_prompt(text)

    def toggle_thinking(self) -> None:
        self.navigation.toggle_thinking(self._model)
        self.writer.said_no_reasoning = False

    def renamed(self, conversation_id: int, title: str) -> None:
        self.navigation.renamed(conversation_id, title)

    def _reload(self):
        """Read the current path again after a change (raises StoreError)."""
        conversation = self.store.get(self.conversation_id)
        self.conversation.load(conversation)
        return conversation

    # ---- conversations ------------------------------------------------------------------------------

    async def open(self, conversation_id: int | None) -> None:
        """Show a saved conversation (None: a new, empty one). Raises StoreError if it cannot be read."""
        conversation = self.store.get(conversation_id) if conversation_id is not None else None
        shown_places = places(self.store, conversation.messages) if conversation is not None else {}
        if self.generation is not None:
            # The answer keeps being saved to its own conversation; it just is not shown any more.
            self.generation.detached = True
            self._backend.cancel(self.generation.job)
        self.conversation.open(conversation)
        self.view.show_title(conversation.title if conversation is not None else "New conversation")
        await self.view.show_conversation(conversation, shown_places)
        if conversation is None:
            self.view.show_system_prompt(self.system_prompt)
        self.view.show_thinking(self.think)

    async def deleted(self, conversation_id: int) -> None:
        self._backend.forget(conversation_id)
        if conversation_id == self.conversation_id:
            await self.open(None)
