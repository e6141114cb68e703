"""The chat screen: transcript with the live canvas, prompt, attachments, sampler panel and status bar.

The screen never touches MLX. It sends a `GenerationRequest` to the app's engine worker, reads the newest
canvas frame from the worker's slot on a 30 Hz timer while an answer is being written, and gets the rare
events (started, block committed, finished, failed) from the app, which receives them from the worker.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static

from engine.errors import InputError
from engine.events import (
    BlockCommitted,
    Finished,
    Frame,
    GenerationFailed,
    GenerationRequest,
    GenerationUpdate,
    Started,
)
from engine.settings import Settings
from tui.store import StoreError

from ..widgets.attachments import AttachmentBar, inspect_attachment
from ..widgets.messages import AssistantMessage, UserMessage
from ..widgets.prompt import IMAGE_COMMAND, PathSuggester, PromptInput
from ..widgets.sampler_panel import SamplerPanel
from ..widgets.status_bar import StatusBar
from .dialogs import TextPromptScreen

FRAME_INTERVAL_S = 1 / 30
# Drawing a frame costs the UI thread milliseconds of CPU, which an engine computing on the same cores
# loses. So the next frame waits until the UI thread's CPU time since the last drawn one (its compositing
# included) is within UI_CPU_BUDGET of the time passed, but never longer than MAX_FRAME_INTERVAL_S; the
# first frame of each block is drawn at once. A fast machine still gets 30 frames a second.
UI_CPU_BUDGET = 0.02
# 0.5 s rather than 0.25 s: on 2 cores the forced frames alone cost ~2-5 % of the engine's throughput
# (bench_ui: 0.3-4.8 % at 0.25 s, 1.4-1.5 % at 0.5 s).
MAX_FRAME_INTERVAL_S = 0.5
# Without new frames (slow steps, prefill) the elapsed time in the status bar still moves at this interval.
STATUS_INTERVAL_S = 1.0

WELCOME = (
    "Type a message and press Enter. The answer is denoised a block at a time: watch the canvas under it.\n"
    "F1 help · ctrl+b sampler · ctrl+t thinking · ctrl+f attach image · ctrl+l model · ctrl+p commands"
)


@dataclass
class Generation:
    """The answer being written: which worker job, where it is shown and how far it got."""

    job: int
    conversation_id: int
    message: AssistantMessage
    token_budget: int | None
    started_at: float = field(default_factory=time.monotonic)
    committed_block: int = -1
    generated_tokens: int = 0
    last_frame: Frame | None = None
    drawn_at: float = field(default_factory=time.monotonic)     # when the screen last drew for this answer
    drawn_cpu: float = field(default_factory=time.thread_time)  # the UI thread's CPU time then
    detached: bool = False       # the person switched away; results still go to the store

    def total_blocks(self, block_length: int) -> int | None:
        """Blocks this answer can take at most, given what is committed and the current block length."""
        if not self.token_budget or block_length <= 0:
            return None
        remaining = max(self.token_budget - self.generated_tokens, 0)
        return self.committed_block + 1 + max(math.ceil(remaining / block_length), 1)


class ChatScreen(Screen):
    BINDINGS = [
        # Always listed: hiding it while idle would rebuild the footer at every answer's start and end.
        Binding("escape", "cancel_generation", "Cancel"),
        Binding("ctrl+b", "toggle_sampler", "Sampler"),
        Binding("ctrl+t", "toggle_thinking", "Thinking"),
        Binding("ctrl+f", "attach_image", "Image"),
        Binding("ctrl+n", "new_conversation", "New"),
        Binding("ctrl+o", "app.conversations", "Chats"),
        Binding("ctrl+l", "app.choose_model", "Model"),
        Binding("ctrl+y", "copy_answer", "Copy"),
        Binding("f1", "app.help", "Help"),
    ]

    def __init__(self, think: bool = False):
        super().__init__()
        self.conversation_id: int | None = None
        self.think = think                     # thinking on for this conversation
        self.history: list[dict] = []          # what the engine gets: role/content of the saved turns
        self.generation: Generation | None = None
        self.last_answer = ""

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="body"):
            with Vertical(id="chat"):
                with VerticalScroll(id="transcript"):
                    yield Static(WELCOME, id="welcome", markup=False)
                yield AttachmentBar(id="attachments")
                yield PromptInput(id="prompt", placeholder="Message (Enter sends · /image PATH attaches an image)")
            yield SamplerPanel(id="sampler")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "New conversation"
        self._frame_timer = self.set_interval(FRAME_INTERVAL_S, self.draw_latest_frame, pause=True)
        self.query_one("#transcript", VerticalScroll).anchor()
        self.status_bar.set_thinking(self.think)
        self.prompt.focus()

    @property
    def prompt(self) -> PromptInput:
        return self.query_one(PromptInput)

    @property
    def status_bar(self) -> StatusBar:
        return self.query_one(StatusBar)

    @property
    def transcript(self) -> VerticalScroll:
        return self.query_one("#transcript", VerticalScroll)

    @property
    def attachments(self) -> AttachmentBar:
        return self.query_one(AttachmentBar)

    # ---- model --------------------------------------------------------------------------------------

    async def model_changed(self) -> None:
        """The app loaded (or unloaded) a model: show it and its family's sampler settings."""
        model = self.app.model_info
        self.status_bar.set_model(model.name if model else None, model.label if model else "")
        self.status_bar.set_activity("ready" if model else "choose a model (ctrl+l)")
        self.sub_title = f"{model.name} · {model.label}" if model else ""
        family = model.family if model else None
        settings = self.app.settings_for(family) if family else Settings()
        defaults = dict(model.setting_defaults) if model else {}
        await self.query_one(SamplerPanel).show_settings(family, settings, self.app.config.canvas_mode, defaults)
        if model and not model.supports_images and self.attachments.attachments:
            self.notify(f"{model.name} is text-only: remove the image attachments before sending.",
                        severity="warning", markup=False)

    def show_activity(self, text: str) -> None:
        self.status_bar.set_activity(text)

    @on(SamplerPanel.Changed)
    def _sampler_changed(self, event: SamplerPanel.Changed) -> None:
        event.stop()
        if self.app.model_info is not None:
            self.app.remember_settings(self.app.model_info.family, event.settings)

    @on(SamplerPanel.CanvasModeChanged)
    def _canvas_mode_changed(self, event: SamplerPanel.CanvasModeChanged) -> None:
        event.stop()
        self.app.set_canvas_mode(event.mode)

    def action_toggle_sampler(self) -> None:
        self.query_one(SamplerPanel).toggle_class("-open")

    # ---- sending --------------------------------------------------------------------------------------

    @on(Input.Submitted, "#prompt")
    async def _prompt_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if text == IMAGE_COMMAND.strip() or text.startswith(IMAGE_COMMAND):
            if self.attach(text[len(IMAGE_COMMAND.strip()):].strip()):
                self.prompt.value = ""
            return
        if text and await self.send(text):
            self.prompt.remember(text)
            self.prompt.value = ""

    async def send(self, text: str) -> bool:
        """Save and show the user's turn and start the answer; False (with a notice) when it cannot be sent."""
        app = self.app
        model = app.model_info
        if self.generation is not None:
            self.notify("An answer is still being written; Esc cancels it.", severity="warning", markup=False)
            return False
        if model is None:
            self.notify("No model is loaded: choose one with ctrl+l.", severity="warning", markup=False)
            return False
        attachments = self.attachments.attachments
        if attachments and not model.supports_images:
            self.notify(f"{model.name} is text-only and cannot read images: remove the attachment chips first.",
                        severity="error", markup=False)
            return False
        images = [a.path for a in attachments]
        try:
            if self.conversation_id is None:
                conversation = app.store.create(_title_from(text), model.name, think=self.think)
                self.conversation_id = conversation.id
                self.title = conversation.title
            app.store.add_message(self.conversation_id, "user", text, images=images)
        except StoreError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return False
        self.history.append(user_turn(text, images))
        await self._remove_welcome()
        answer = AssistantMessage()
        await self.transcript.mount_all([UserMessage(text, [a.label for a in attachments]), answer])
        self.attachments.clear()
        settings = app.settings_for(model.family)
        job = app.engine_worker.generate(
            GenerationRequest(tuple(self.history), settings, think=self.think, conversation=self.conversation_id)
        )
        budget = settings.max_tokens or model.setting_defaults.get("max_tokens")
        self.generation = Generation(job, self.conversation_id, answer, budget)
        self.status_bar.set_activity("reading the prompt…")
        self._frame_timer.resume()
        return True

    async def _remove_welcome(self) -> None:
        for welcome in self.query("#welcome"):
            await welcome.remove()

    # ---- the answer being written ---------------------------------------------------------------------

    def draw_latest_frame(self) -> None:
        """Up to 30 Hz while generating: show the worker's newest canvas frame, if it is new and still current,
        and the numbers in the status bar; skipped while drawing is over its CPU budget."""
        generation = self.generation
        if generation is None or generation.detached:
            return
        frame = self.app.engine_worker.latest_frame
        is_new = (
            frame is not None and frame is not generation.last_frame and frame.job == generation.job
            # A frame of an already committed block can still sit in the slot after its BlockCommitted.
            and frame.step.block > generation.committed_block
        )
        now, cpu = time.monotonic(), time.thread_time()
        shown = generation.last_frame
        first_of_block = is_new and (shown is None or shown.step.block != frame.step.block)
        if not first_of_block:
            budget_wait = min(MAX_FRAME_INTERVAL_S, (cpu - generation.drawn_cpu) / UI_CPU_BUDGET)
            wait = budget_wait if is_new else max(budget_wait, STATUS_INTERVAL_S)
            if now - generation.drawn_at < wait:
                return
        if is_new:
            generation.last_frame = frame
            step = frame.step
            block_length = len(step.canvas) - step.prompt_positions
            generation.message.show_frame(step, self.app.token_texts, self.app.config.canvas_mode,
                                          generation.total_blocks(block_length))
        generation.drawn_at, generation.drawn_cpu = now, cpu
        self._show_live_status(generation, now - generation.started_at)

    def _show_live_status(self, generation: Generation, elapsed: float) -> None:
        frame = generation.last_frame
        if frame is None or frame.step.block <= generation.committed_block:
            self.status_bar.set_activity(f"reading the prompt… {elapsed:.1f} s")
            return
        step = frame.step
        accepted = int(step.accepted[step.prompt_positions:].sum())
        self.status_bar.show_generation(generation.generated_tokens / max(elapsed, 1e-9), step.step + 1,
                                        step.max_steps, accepted / (step.step + 1), elapsed)

    async def handle_generation_event(self, event: GenerationUpdate | GenerationFailed) -> None:
        generation = self.generation
        if generation is None or event.job != generation.job:
            return
        if isinstance(event, GenerationFailed):
            await self._end_generation(generation, "error", generation.message.content,
                                       generation.message.reasoning, None, note=f"⚠ {event.message}")
            return
        update = event.event
        if isinstance(update, Started):
            self.status_bar.set_activity(f"prompt {update.prompt_tokens} tokens read in {update.prefill_s:.2f} s")
        elif isinstance(update, BlockCommitted):
            generation.committed_block = update.block
            generation.generated_tokens += len(update.token_ids)
            if not generation.detached:
                await generation.message.add_block(update.content_delta, update.reasoning_delta)
        elif isinstance(update, Finished):
            if not generation.detached and (update.content_tail or update.reasoning_tail):
                await generation.message.add_block(update.content_tail, update.reasoning_tail)
            status = "cancelled" if update.finish_reason == "cancelled" else "complete"
            stats = update.stats
            await self._end_generation(generation, status, update.content, update.reasoning, {
                "finish_reason": update.finish_reason,
                "tokens_per_s": round(stats.tokens_per_s, 3),
                "generated_tokens": stats.generated_tokens,
                "steps_per_block": list(stats.steps_per_block),
                "total_s": round(stats.total_s, 3),
            })
            if not generation.detached:
                steps = sum(stats.steps_per_block)
                blocks = len(stats.steps_per_block)
                self.status_bar.set_activity(
                    f"{stats.tokens_per_s:.1f} tok/s │ {steps} steps, {blocks} block{'s' * (blocks != 1)} │ "
                    f"{stats.total_s:.1f} s │ {update.finish_reason}"
                )

    async def _end_generation(self, generation: Generation, status: str, content: str, reasoning: str,
                              stats: dict | None, note: str = "") -> None:
        self.generation = None
        self._frame_timer.pause()
        try:
            self.app.store.add_message(generation.conversation_id, "assistant", content, reasoning=reasoning,
                                       status=status, stats=stats)
        except StoreError as exc:
            self.notify(str(exc), severity="error", markup=False)
        if generation.detached:
            return
        generation.message.finish(status, note)
        if status == "error":
            self.status_bar.set_activity("generation failed")
            return
        self.history.append({"role": "assistant", "content": content})
        if content:
            self.last_answer = content

    def action_cancel_generation(self) -> None:
        if self.generation is not None:
            self.app.engine_worker.cancel(self.generation.job)
            self.status_bar.set_activity("cancelling…")

    # ---- conversations --------------------------------------------------------------------------------

    async def show_conversation(self, conversation_id: int | None) -> None:
        """Replace the transcript with a saved conversation (None: a new, empty one)."""
        if self.generation is not None:
            # The answer keeps being saved to its own conversation; it just is not shown any more.
            self.generation.detached = True
            self.app.engine_worker.cancel(self.generation.job)
        await self.transcript.remove_children()
        self.attachments.clear()
        self.history, self.last_answer = [], ""
        self.conversation_id = conversation_id
        if conversation_id is None:
            self.title = "New conversation"
            self.think = self.app.default_think
            await self.transcript.mount(Static(WELCOME, id="welcome", markup=False))
            self.prompt.set_history([])
        else:
            conversation = self.app.store.get(conversation_id)
            self.title = conversation.title
            self.think = conversation.think
            widgets = []
            for message in conversation.messages:
                if message.role == "user":
                    widgets.append(UserMessage(message.content, [Path(path).name for path in message.images]))
                    self.history.append(user_turn(message.content, message.images))
                elif message.role == "assistant":
                    note = "⚠ the answer failed" if message.status == "error" else ""
                    widgets.append(AssistantMessage(message.content, message.reasoning, message.status, note))
                    if message.status != "error":  # a failed answer is shown, never sent back to the model
                        self.history.append({"role": "assistant", "content": message.content})
                    self.last_answer = message.content or self.last_answer
            await self.transcript.mount_all(widgets)
            self.prompt.set_history([m.content for m in conversation.messages if m.role == "user"])
            self.transcript.scroll_end(animate=False)
        self.status_bar.set_thinking(self.think)
        self.prompt.focus()

    def conversation_renamed(self, conversation_id: int, title: str) -> None:
        if conversation_id == self.conversation_id:
            self.title = title

    async def conversation_deleted(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            await self.show_conversation(None)

    async def action_new_conversation(self) -> None:
        await self.show_conversation(None)

    def action_toggle_thinking(self) -> None:
        self.think = not self.think
        if self.conversation_id is not None:
            try:
                self.app.store.set_think(self.conversation_id, self.think)
            except StoreError as exc:
                self.notify(str(exc), severity="error", markup=False)
        self.status_bar.set_thinking(self.think)
        self.notify(f"Thinking {'on' if self.think else 'off'} for this conversation (from the next turn).",
                    markup=False)

    # ---- attachments ----------------------------------------------------------------------------------

    def action_attach_image(self) -> None:
        self.app.push_screen(
            TextPromptScreen("Attach an image", placeholder="path to a PNG, JPEG, WebP, … file",
                             suggester=PathSuggester(), hint="→ completes the path · Enter attaches · Esc cancels"),
            lambda path: self.attach(path) if path else None,
        )

    def attach(self, path: str) -> bool:
        """Check and attach an image; every refusal is one notice and nothing is attached."""
        if not path:
            self.notify("Give a path: /image PATH", severity="warning", markup=False)
            return False
        model = self.app.model_info
        if model is not None and not model.supports_images:
            self.notify(f"{model.name} is text-only and cannot read images.", severity="error", markup=False)
            return False
        try:
            attachment = inspect_attachment(path, model.image_budget if model is not None else None)
        except InputError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return False
        if not self.attachments.add(attachment):
            self.notify(f"{attachment.name} is already attached.", markup=False)
        return True

    # ---- copying --------------------------------------------------------------------------------------

    def action_copy_answer(self) -> None:
        if not self.last_answer:
            self.notify("There is no answer to copy yet.", markup=False)
            return
        self.app.copy_to_clipboard(self.last_answer)
        self.notify("Copied the last answer to the clipboard.", markup=False)


def user_turn(text: str, images: Sequence[str]) -> dict:
    """A user message for the engine. Images stay in their own turn, so later turns still show them to the
    model and the conversation's prompt keeps its prefix (and its cache)."""
    if not images:
        return {"role": "user", "content": text}
    return {"role": "user", "content": [*({"type": "image", "path": path} for path in images),
                                         {"type": "text", "text": text}]}


def _title_from(text: str, length: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= length else line[: length - 1] + "…"
