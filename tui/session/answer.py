"""The answer being written, without Textual: starting it, showing the backend's newest canvas frame within the
frame pacer's budget, the live status line, and each engine event up to saving the answer (and its recording)
in the store when it ends."""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from engine.events import (
    BlockCommitted,
    Finished,
    GenerationFailed,
    GenerationRequest,
    GenerationUpdate,
    ModelInfo,
    Prefilling,
    Started,
)
from engine.settings import Settings

from ..store import ConversationStore, StoreError
from ..words import count
from .conversation_path import answer_stats, place_of, tokens_counted
from .frame_pacer import FramePacer
from .generation import FillKind, Generation
from .navigation import ConversationState
from .prefill_eta import eta_text
from .view import Backend, ChatView


class AnswerWriter:
    """Holds `generation`, the answer being written (None between answers)."""

    def __init__(self, store: ConversationStore, view: ChatView, state: ConversationState, *,
                 clock: Callable[[], float] = time.monotonic, cpu_clock: Callable[[], float] = time.thread_time):
        self.store, self.view, self.state = store, view, state
        self.clock, self.cpu_clock = clock, cpu_clock
        self.generation: Generation | None = None
        self.said_no_reasoning = False   # once per switch of thinking: the model gave none
        self.model_name: str | None = None

    def start(self, backend: Backend, model: ModelInfo, request: GenerationRequest, answer: Any,
              revision_of: int | None = None, fill_kind: FillKind | None = None) -> None:
        settings: Settings = request.settings
        job = backend.generate(request)
        budget = settings.max_tokens or model.setting_defaults.get("max_tokens")
        now = self.clock()
        self.model_name = model.name   # the conversation list labels a conversation with the model last used
        self.generation = Generation(job, request.conversation, answer, settings, budget, started_at=now,
                                     revision_of=revision_of, fill_kind=fill_kind, frames=model.frames,
                                     think=request.think,
                                     pacer=FramePacer(now, self.cpu_clock()))
        self.view.show_activity("reading the prompt…")
        if request.fill is not None:
            self.view.show_filled(answer, ())   # plain text from its first block on
        if not model.frames:
            self.view.show_canvas_note(answer, "remote: committed blocks only")
        self.view.set_live(True)

    def poll(self, backend: Backend) -> None:
        """Called often while an answer is written (a frame timer): show the backend's newest canvas frame if it
        is new and still current, and the numbers of the live block, within the pacer's CPU budget."""
        generation = self.generation
        if generation is None or generation.detached:
            return
        frame = backend.latest_frame
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
            if not generation.frames:
                blocks = generation.committed_block + 1
                # (no tok/s: another server says its token counts only at the end, if at all)
                self.view.show_activity(f"{count(blocks, 'block')} committed │ {elapsed:.1f} s")
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
            await self._end(generation, "error", {"think": bool(generation.think)}, note=f"⚠ {event.message}")
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
            if generation.think and not update.reasoning and status == "complete" and not self.said_no_reasoning:
                self.said_no_reasoning = True
                self.view.notify("No reasoning from this model: thinking is on, but it answered without any.")
            stats = answer_stats(update, generation.started, generation.accepted_per_block)
            await self._end(generation, status, {**stats, **generation.saved_extras()})
            if not generation.detached:
                stats = update.stats
                steps, blocks = sum(stats.steps_per_block), len(stats.steps_per_block)
                steps_text = f"{count(steps, 'step')}, " if steps else ""   # a remote server may not say
                edits = sum(generation.edits_per_block)
                rate = f"{stats.tokens_per_s:.1f} tok/s │ " if tokens_counted(update) else ""   # a server may not say
                self.view.show_activity(
                    f"{rate}{steps_text}{count(blocks, 'block')} │ "
                    + (f"{count(edits, 'edit')} │ " if edits else "")
                    + f"{stats.total_s:.1f} s │ {update.finish_reason}"
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
            if self.model_name is not None:
                self.store.set_model(generation.conversation_id, self.model_name)
            if not generation.detached:
                place = place_of(self.store, saved)
                self.state.load(self.store.get(generation.conversation_id))
        except StoreError as exc:
            self.view.notify(str(exc), "error")
        if generation.detached:
            return
        await self.view.finish_answer(generation.answer, status, note, place)
        if status == "error":
            self.view.show_activity("generation failed")

    def _show_filled(self, generation: Generation, spans: Sequence[tuple[int, int]]) -> None:
        if generation.fill_kind is None:
            return
        generation.filled_spans = tuple(tuple(span) for span in spans)
        if not generation.detached:
            self.view.show_filled(generation.answer, generation.filled_spans)

    def keep_trajectory(self, revision_id: int, data: bytes | None) -> None:
        """Save an answer's recording; one quiet notice if it alone is over the conversation's cap."""
        if data is None:
            return
        try:
            kept = self.store.save_trajectory(revision_id, data)
        except StoreError as exc:
            self.view.notify(str(exc), "error")
            return
        if not kept:
            cap = self.store.trajectory_cap / 2**20
            self.view.notify(f"The denoising recording ({len(data) / 2**20:.1f} MiB) is over the {cap:g} MiB cap "
                             "per conversation (trajectory_cap_mb): it was not kept.")
