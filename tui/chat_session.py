"""The chat's turn logic, without Textual: history, the answer being written, requests, store writes and the
pacing of live canvas frames.

`ChatSession` talks to a backend (the local engine thread, or a remote server: anything with `generate`,
`cancel`, `forget` and a `latest_frame` slot) and to a `ChatView` (the chat screen, or a fake in tests). It
decides; the view only draws. Everything the engine says arrives through `handle(...)` as the events of
`engine.events`.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

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
from engine.context import fit_max_tokens
from engine.errors import EngineError, SettingsError
from engine.settings import SPECS, Settings

from .frame_pacer import FramePacer
from .store import Conversation, ConversationStore, StoreError


class ChatView(Protocol):
    """What the session asks of whoever shows the chat. `answer` handles are whatever `start_answer` returned."""

    async def show_turn(self, text: str, image_labels: Sequence[str]) -> Any: ...   # returns the answer handle

    async def add_text(self, answer: Any, content: str, reasoning: str) -> None: ...

    def show_frame(self, answer: Any, step: Step, total_blocks: int | None) -> None: ...

    def show_canvas_note(self, answer: Any, text: str) -> None: ...    # no frames will come for this answer

    async def finish_answer(self, answer: Any, status: str, note: str) -> None: ...

    async def show_conversation(self, conversation: Conversation | None) -> None: ...

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


@dataclass
class Generation:
    """The answer being written: which job, where it is shown and how far it got."""

    job: int
    conversation_id: int
    answer: Any                  # the view's handle
    settings: Settings
    token_budget: int | None
    started_at: float
    committed_block: int = -1
    generated_tokens: int = 0
    content: str = ""
    reasoning: str = ""
    last_frame: Frame | None = None
    prefilling: Prefilling | None = None   # how far a long prompt's encoding got
    detached: bool = False       # the person switched away; results still go to the store
    pacer: FramePacer = field(default_factory=FramePacer)

    def total_blocks(self, block_length: int) -> int | None:
        """Blocks this answer can take at most, given what is committed and the current block length."""
        if not self.token_budget or block_length <= 0:
            return None
        remaining = max(self.token_budget - self.generated_tokens, 0)
        return self.committed_block + 1 + max(math.ceil(remaining / block_length), 1)


class ChatSession:
    def __init__(self, store: ConversationStore, backend: Backend, view: ChatView,
                 settings_for: Callable[[str], Settings], *, think: bool = False,
                 clock: Callable[[], float] = time.monotonic, cpu_clock: Callable[[], float] = time.thread_time):
        self.store, self.backend, self.view = store, backend, view
        self.settings_for = settings_for
        self.default_think = think
        self.clock, self.cpu_clock = clock, cpu_clock
        self.model: ModelInfo | None = None
        self.conversation_id: int | None = None
        self.think = think                     # thinking on for this conversation
        self.history: list[dict] = []          # what the engine gets: role/content of the saved turns
        self.generation: Generation | None = None
        self.last_answer = ""

    # ---- sending ------------------------------------------------------------------------------------

    async def send(self, text: str, images: Sequence[str] = (), image_labels: Sequence[str] = ()) -> bool:
        """Save and show the user's turn and start the answer; False (with a notice) when it cannot be sent."""
        model = self.model
        if self.generation is not None:
            self.view.notify("An answer is still being written; Esc cancels it.", "warning")
            return False
        if model is None:
            self.view.notify("No model is loaded: choose one with ctrl+l.", "warning")
            return False
        if images and not model.supports_images:
            self.view.notify(f"{model.name} is text-only and cannot read images: remove the attachment chips first.",
                             "error")
            return False
        if not await self._fits_context(model, text, images):
            return False
        try:
            if self.conversation_id is None:
                conversation = self.store.create(title_from(text), model.name, think=self.think)
                self.conversation_id = conversation.id
                self.view.show_title(conversation.title)
            self.store.add_message(self.conversation_id, "user", text, images=list(images))
        except StoreError as exc:
            self.view.notify(str(exc), "error")
            return False
        self.history.append(user_turn(text, images))
        answer = await self.view.show_turn(text, image_labels)
        settings = self.settings_for(model.family)
        job = self.backend.generate(
            GenerationRequest(tuple(self.history), settings, think=self.think, conversation=self.conversation_id))
        budget = settings.max_tokens or model.setting_defaults.get("max_tokens")
        now = self.clock()
        self.generation = Generation(job, self.conversation_id, answer, settings, budget, started_at=now,
                                     pacer=FramePacer(now, self.cpu_clock()))
        self.view.show_activity("reading the prompt…")
        if not model.frames:
            self.view.show_canvas_note(answer, "remote: committed blocks only")
        self.view.set_live(True)
        return True

    def draft_messages(self, text: str, images: Sequence[str] = ()) -> list[dict]:
        """What the engine would get if `text` (and `images`) were sent now: the history plus that turn."""
        return [*self.history, user_turn(text, images)]

    def context_verdict(self, model: ModelInfo, prompt_tokens: int) -> str | None:
        """None when a prompt of `prompt_tokens` fits the model's context with this turn's max_tokens, else the
        one-line reason (engine.context's rule, the one the engine applies; settings named by their labels)."""
        settings = self.settings_for(model.family)
        budget = settings.max_tokens or model.setting_defaults.get("max_tokens") or 1
        try:
            fit_max_tokens(prompt_tokens, budget, settings.max_tokens is not None, model.context_length)
        except SettingsError as exc:
            return exc.render(lambda name: SPECS[name].label_for(model.family))
        except EngineError as exc:
            return str(exc)
        return None

    async def _fits_context(self, model: ModelInfo, text: str, images: Sequence[str]) -> bool:
        """Refuse, with one notice and before anything is saved or sent, a turn whose prompt cannot fit the
        model's context. Counted with the engine's own template and tokenizer (`ModelInfo.count_tokens`) on a
        worker thread, so a huge paste never blocks the UI; the engine checks again and has the last word (its
        refusal arrives as a failed answer)."""
        if model.count_tokens is None or not model.context_length:
            return True
        try:
            tokens = await asyncio.to_thread(model.count_tokens, self.draft_messages(text, images), self.think)
        except EngineError:
            return True  # a problem with the messages themselves: the engine reports it, in the transcript
        verdict = self.context_verdict(model, tokens)
        if verdict is not None:
            self.view.notify(f"Not sent: {verdict}.", "error")
            return False
        return True

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
                self.view.show_activity(f"reading the prompt… {done}{elapsed:.1f} s")
            return
        step = frame.step
        accepted = int(step.accepted[step.prompt_positions:].sum())
        tokens_per_s = generation.generated_tokens / max(elapsed, 1e-9)
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
            self._show_live_status(generation, self.clock() - generation.started_at)
        elif isinstance(update, Started):
            self.view.show_activity(f"prompt {update.prompt_tokens} tokens read in {update.prefill_s:.2f} s")
        elif isinstance(update, BlockCommitted):
            generation.committed_block = update.block
            generation.generated_tokens += len(update.token_ids)
            await self._add_text(generation, update.content_delta, update.reasoning_delta)
        elif isinstance(update, Finished):
            if update.content_tail or update.reasoning_tail:
                await self._add_text(generation, update.content_tail, update.reasoning_tail)
            # The engine's whole texts are what is saved (equal to the deltas shown, tails included).
            generation.content, generation.reasoning = update.content, update.reasoning
            stats = update.stats
            await self._end(generation, "cancelled" if update.finish_reason == "cancelled" else "complete", {
                "finish_reason": update.finish_reason,
                "tokens_per_s": round(stats.tokens_per_s, 3),
                "generated_tokens": stats.generated_tokens,
                "steps_per_block": list(stats.steps_per_block),
                "total_s": round(stats.total_s, 3),
            })
            if not generation.detached:
                steps, blocks = sum(stats.steps_per_block), len(stats.steps_per_block)
                steps_text = f"{steps} steps, " if steps else ""   # a remote server may not say
                self.view.show_activity(
                    f"{stats.tokens_per_s:.1f} tok/s │ {steps_text}{blocks} block{'s' * (blocks != 1)} │ "
                    f"{stats.total_s:.1f} s │ {update.finish_reason}"
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
        try:
            self.store.add_message(generation.conversation_id, "assistant", generation.content,
                                   reasoning=generation.reasoning, status=status, stats=stats,
                                   settings=generation.settings.to_dict())
        except StoreError as exc:
            self.view.notify(str(exc), "error")
        if generation.detached:
            return
        await self.view.finish_answer(generation.answer, status, note)
        if status == "error":
            self.view.show_activity("generation failed")
            return
        self.history.append({"role": "assistant", "content": generation.content})
        if generation.content:
            self.last_answer = generation.content

    # ---- conversations ------------------------------------------------------------------------------

    async def open(self, conversation_id: int | None) -> None:
        """Show a saved conversation (None: a new, empty one). Raises StoreError if it cannot be read."""
        conversation = self.store.get(conversation_id) if conversation_id is not None else None
        if self.generation is not None:
            # The answer keeps being saved to its own conversation; it just is not shown any more.
            self.generation.detached = True
            self.backend.cancel(self.generation.job)
        self.conversation_id = conversation_id
        self.history, self.last_answer = [], ""
        if conversation is None:
            self.think = self.default_think
            self.view.show_title("New conversation")
        else:
            self.think = conversation.think
            self.view.show_title(conversation.title)
            for message in conversation.messages:
                if message.role == "user":
                    self.history.append(user_turn(message.content, message.images))
                elif message.role == "assistant":
                    if message.status != "error":  # a failed answer is shown, never sent back to the model
                        self.history.append({"role": "assistant", "content": message.content})
                    self.last_answer = message.content or self.last_answer
        await self.view.show_conversation(conversation)
        self.view.show_thinking(self.think)

    def renamed(self, conversation_id: int, title: str) -> None:
        if conversation_id == self.conversation_id:
            self.view.show_title(title)

    async def deleted(self, conversation_id: int) -> None:
        self.backend.forget(conversation_id)
        if conversation_id == self.conversation_id:
            await self.open(None)

    def toggle_thinking(self) -> None:
        self.think = not self.think
        if self.conversation_id is not None:
            try:
                self.store.set_think(self.conversation_id, self.think)
            except StoreError as exc:
                self.view.notify(str(exc), "error")
        self.view.show_thinking(self.think)
        self.view.notify(f"Thinking {'on' if self.think else 'off'} for this conversation (from the next turn).")


def user_turn(text: str, images: Sequence[str]) -> dict:
    """A user message for the engine. Images stay in their own turn, so later turns still show them to the
    model and the conversation's prompt keeps its prefix (and its cache)."""
    if not images:
        return {"role": "user", "content": text}
    return {"role": "user", "content": [*({"type": "image", "path": path} for path in images),
                                         {"type": "text", "text": text}]}


def title_from(text: str, length: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= length else line[: length - 1] + "…"


def image_labels(paths: Sequence[str]) -> list[str]:
    return [Path(path).name for path in paths]
