"""The chat's turn logic, without Textual: history, the answer being written, requests, store writes and the
pacing of live canvas frames.

`ChatSession` talks to a backend (the local engine thread, or a remote server: anything with `generate`,
`cancel`, `forget` and a `latest_frame` slot) and to a `ChatView` (the chat screen, or a fake in tests). It
decides; the view only draws. Everything the engine says arrives through `handle(...)` as the events of
`engine.events`. Besides sending, it regenerates the last answer as a new revision, resends an edited
message as a new branch, switches branches and revisions, and keeps the conversation's system prompt; the
store holds all of it (see `conversation_path` for what is derived from the saved path).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Mapping, Protocol, Sequence

from engine.events import (
    BlockCommitted,
    Finished,
    Frame,
    GenerationFailed,
    GenerationRequest,
    GenerationUpdate,
    ModelInfo,
    Prefilling,
    Started,
    Step,
)
from engine.fill import FillTemplate
from engine.settings import Settings

from .chat_navigation import ConversationState
from . import prompt_budget
from .conversation_path import (Place, answer_stats, engine_history, place_of, places, request_messages,
                                title_from, user_turn)
from .diffusion_turns import DiffusionTurns
from .frame_pacer import FramePacer
from .generation_state import FillKind, Generation
from .prefill_eta import eta_text
from .store import Conversation, ConversationStore, Message, StoreError
from .words import count


class ChatView(Protocol):
    """What the session asks of whoever shows the chat. `answer` handles are whatever `start_answer` returned."""

    async def show_user(self, message: Message, image_labels: Sequence[str], place: Place) -> None: ...

    async def start_answer(self, message_id: int | None) -> Any:
        """A new answer at the end (None), or the shown answer `message_id` written again (a revision)."""
        ...

    async def add_text(self, answer: Any, content: str, reasoning: str) -> None: ...

    def show_block_steps(self, answer: Any, block: int, accepted_per_step: Sequence[int], edits: int) -> None: ...

    def show_filled(self, answer: Any, spans: Sequence[tuple[int, int]]) -> None: ...  # a template's fillings

    def show_frame(self, answer: Any, step: Step, total_blocks: int | None) -> None: ...

    def show_canvas_note(self, answer: Any, text: str) -> None: ...    # no frames will come for this answer

    def show_live_steps(self, accepted_per_step: Sequence[int]) -> None: ...   # the live block's; () for none

    async def finish_answer(self, answer: Any, status: str, note: str, place: Place | None) -> None: ...

    async def show_answer(self, message: Message, place: Place) -> None: ...  # another revision of a shown answer

    async def show_conversation(self, conversation: Conversation | None, places: Mapping[int, Place]) -> None: ...

    def show_system_prompt(self, text: str | None) -> None: ...

    def focus_message(self, message_id: int) -> None: ...

    def set_live(self, live: bool) -> None: ...           # whether `poll` should be called (a frame timer)

    def show_activity(self, text: str) -> None: ...

    def show_thinking(self, on: bool) -> None: ...

    def show_title(self, title: str) -> None: ...

    def notify(self, message: str, severity: str = "information") -> None: ...


class Backend(Protocol):
    latest_frame: Frame | None

    def generate(self, request: GenerationRequest) -> int: ...

    def cancel(self, job: int) -> None: ...

    def forget(self, conversation: Any) -> None: ...


class ChatSession(DiffusionTurns, ConversationState):
    def __init__(self, store: ConversationStore, backend: Backend, view: ChatView,
                 settings_for: Callable[[str], Settings], *, think: bool = False, system_prompt: str | None = None,
                 record: bool = False, clock: Callable[[], float] = time.monotonic,
                 cpu_clock: Callable[[], float] = time.thread_time):
        super().__init__(store, view, think=think, system_prompt=system_prompt)
        self.backend = backend
        self.settings_for = settings_for
        self.record_trajectories = record   # requests ask the engine for the trajectory, saved with the answer
        self.clock, self.cpu_clock = clock, cpu_clock
        self.model: ModelInfo | None = None
        self.generation: Generation | None = None

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
        try:
            if self.conversation_id is None:
                conversation = self.store.create(title_from(text), model.name, think=self.think,
                                                 system_prompt=self.system_prompt)
                self.conversation_id = conversation.id
                self.view.show_title(conversation.title)
            message = self.store.add_message(self.conversation_id, "user", text, images=list(images))
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
        fill = self.refill(last, prompt)   # a filled template is filled again
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

    def _ready(self, images: Sequence[str]) -> ModelInfo | None:
        """The model, if a new answer can start now; else None, after one notice saying why."""
        model = self.model
        if self.generation is not None:
            self.view.notify("An answer is still being written; Esc cancels it.", "warning")
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
        settings = self.settings_for(model.family)
        # A template's answer has no thinking channel: that turn is asked without thinking.
        job = self.backend.generate(GenerationRequest(
            request_messages(self.system_prompt, history), settings, think=self.think and fill is None,
            conversation=self.conversation_id, fill=fill, record=self.record_trajectories))
        budget = settings.max_tokens or model.setting_defaults.get("max_tokens")
        now = self.clock()
        self.generation = Generation(job, self.conversation_id, answer, settings, budget, started_at=now,
                                     revision_of=revision_of, fill_kind=fill_kind,
                                     pacer=FramePacer(now, self.cpu_clock()))
        self.view.show_activity("reading the prompt…")
        if fill is not None:
            self.view.show_filled(answer, ())   # plain text from its first block on
        if not model.frames:
            self.view.show_canvas_note(answer, "remote: committed blocks only")
        self.view.set_live(True)

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
            self.backend.cancel(self.generation.job)
            self.view.show_activity("cancelling…")

    # ---- the answer being written -------------------------------------------------------------------

    def poll(self) -> None:
        """Called often while an answer is written (a frame timer): show the backend's newest canvas frame if it
        is new and still current, and the numbers of the live block, within the pacer's CPU budget."""
        generation = self.generation
        if generation is None or generation.detached:
            return
        frame = self.backend.latest_frame
        is_new = (
            frame is not None and frame is not generation.last_frame and frame.job == generation.job
            # A frame of an already committed block can still sit in the slot after its BlockCommitted.
            and frame.step.block > generation.committed_block
        )
        if is_new:
            generation.live_steps.see(frame.step)  # cheap, and every step seen makes the live curve truer
        shown = generation.last_frame
        first_of_block = is_new and (shown is None or shown.step.block != frame.step.block)
        now, cpu = self.clock(), self.cpu_clock()
        if not generation.pacer.due(now, cpu, is_new, first_of_block):
            return
        if is_new:
            generation.last_frame = frame
            step = frame.step
            block_length = len(step.canvas) - step.prompt_positions
            self.view.show_frame(generation.answer, step, generation.total_blocks(block_length))
        # The CPU clock read before drawing: the next budget includes what this frame costs.
        generation.pacer.drawn(now, cpu)
        self._show_live_status(generation, now - generation.started_at)

    def _show_live_status(self, generation: Generation, elapsed: float) -> None:
        frame = generation.last_frame
        if frame is None or frame.step.block <= generation.committed_block:
            if self.model is not None and not self.model.frames:
                blocks = generation.committed_block + 1
                self.view.show_activity(f"remote │ {blocks} block{'s' * (blocks != 1)} committed │ {elapsed:.1f} s")
            else:
                read = generation.prefilling
                done = f"{read.encoded_tokens:,} / {read.total_tokens:,} tokens · " if read and frame is None else ""
                eta = eta_text(generation.prefill_estimate.remaining_s()) if read and frame is None else ""
                self.view.show_activity(f"reading the prompt… {done}{eta + ' · ' if eta else ''}{elapsed:.1f} s")
            return
        step = frame.step
        accepted = int(step.accepted[step.prompt_positions:].sum())
        # Committed tokens and the live block's accepted ones: during the first block the committed count alone is 0.
        tokens_per_s = (generation.generated_tokens + accepted) / max(elapsed, 1e-9)
        self.view.show_live_steps(tuple(generation.live_steps.counts))
        self.view.show_activity(
            f"{tokens_per_s:.1f} tok/s │ step {step.step + 1}/{step.max_steps} this block │ "
            f"{accepted / (step.step + 1):.1f} accepted/step │ {elapsed:.1f} s"
        )

    async def handle(self, event: GenerationUpdate | GenerationFailed) -> None:
        """An event of the backend, delivered on the UI's own thread."""
        generation = self.generation
        if generation is None or event.job != generation.job:
            return
        if isinstance(event, GenerationFailed):
            await self._end(generation, "error", None, note=f"⚠ {event.message}")
            return
        update = event.event
        if isinstance(update, Prefilling):
            generation.prefilling = update
            elapsed = self.clock() - generation.started_at
            generation.prefill_estimate.observe(update.encoded_tokens, update.total_tokens, elapsed)
            self._show_live_status(generation, elapsed)
        elif isinstance(update, Started):
            generation.started = update
            self.view.show_activity(f"prompt {update.prompt_tokens} tokens read in {update.prefill_s:.2f} s")
        elif isinstance(update, BlockCommitted):
            generation.committed_block = update.block
            generation.generated_tokens += len(update.token_ids)
            generation.accepted_per_block.append(list(update.accepted_per_step))
            generation.edits_per_block.append(update.edits)
            await self._add_text(generation, update.content_delta, update.reasoning_delta)
            self._show_filled(generation, update.filled_spans)
            if update.stop_reason != "cancelled" and not generation.detached:
                self.view.show_block_steps(generation.answer, update.block, update.accepted_per_step, update.edits)
        elif isinstance(update, Finished):
            if update.content_tail or update.reasoning_tail:
                await self._add_text(generation, update.content_tail, update.reasoning_tail)
            self._show_filled(generation, update.filled_spans)
            # The engine's whole texts are what is saved (equal to the deltas shown, tails included).
            generation.content, generation.reasoning = update.content, update.reasoning
            generation.trajectory = update.trajectory
            status = "cancelled" if update.finish_reason == "cancelled" else "complete"
            stats = answer_stats(update, generation.started, generation.accepted_per_block)
            await self._end(generation, status, {**stats, **generation.saved_extras()})
            if not generation.detached:
                stats = update.stats
                steps, blocks = sum(stats.steps_per_block), len(stats.steps_per_block)
                steps_text = f"{count(steps, 'step')}, " if steps else ""   # a remote server may not say
                edits = sum(generation.edits_per_block)
                self.view.show_activity(
                    f"{stats.tokens_per_s:.1f} tok/s │ {steps_text}{count(blocks, 'block')} │ "
                    + (f"{edits} edits │ " if edits else "") + f"{stats.total_s:.1f} s │ {update.finish_reason}"
                )

    async def _add_text(self, generation: Generation, content: str, reasoning: str) -> None:
        """Committed text (a block, or the held-back tail); an empty block still clears the live canvas."""
        generation.content += content
        generation.reasoning += reasoning
        if not generation.detached:
            await self.view.add_text(generation.answer, content, reasoning)

    async def _end(self, generation: Generation, status: str, stats: dict | None, note: str = "") -> None:
        self.generation = None
        self.view.set_live(False)
        self.view.show_live_steps(())
        place = None
        try:
            settings = generation.settings.to_dict()
            if generation.revision_of is None:
                saved = self.store.add_message(generation.conversation_id, "assistant", generation.content,
                                               reasoning=generation.reasoning, status=status, stats=stats,
                                               settings=settings)
                revision_id = self.store.revisions(saved.id)[0].id
            else:
                revision_id = self.store.add_revision(generation.revision_of, generation.content,
                                                      generation.reasoning, status, stats, settings).id
                saved = self.store.get_message(generation.revision_of)
            self.keep_trajectory(revision_id, generation.trajectory)
            if self.model is not None:   # the list labels a conversation with the model last used
                self.store.set_model(generation.conversation_id, self.model.name)
            if not generation.detached:
                place = place_of(self.store, saved)
                self._reload()
        except StoreError as exc:
            self.view.notify(str(exc), "error")
        if generation.detached:
            return
        await self.view.finish_answer(generation.answer, status, note, place)
        if status == "error":
            self.view.show_activity("generation failed")

    # ---- conversations ------------------------------------------------------------------------------

    async def open(self, conversation_id: int | None) -> None:
        """Show a saved conversation (None: a new, empty one). Raises StoreError if it cannot be read."""
        conversation = self.store.get(conversation_id) if conversation_id is not None else None
        shown_places = places(self.store, conversation.messages) if conversation is not None else {}
        if self.generation is not None:
            # The answer keeps being saved to its own conversation; it just is not shown any more.
            self.generation.detached = True
            self.backend.cancel(self.generation.job)
        self.conversation_id = conversation_id
        if conversation is None:
            self.think, self.system_prompt = self.default_think, self.default_system_prompt
            self.messages, self.history, self.last_answer = (), [], ""
            self.view.show_title("New conversation")
        else:
            self.think, self.system_prompt = conversation.think, conversation.system_prompt
            self._load(conversation)
            self.view.show_title(conversation.title)
        await self.view.show_conversation(conversation, shown_places)
        if conversation is None:
            self.view.show_system_prompt(self.system_prompt)
        self.view.show_thinking(self.think)

    async def deleted(self, conversation_id: int) -> None:
        self.backend.forget(conversation_id)
        if conversation_id == self.conversation_id:
            await self.open(None)
