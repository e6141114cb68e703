"""The turns only a diffusion chat has, without Textual (a mixin of `ChatSession`): filling the person's text
with holes (`/fill`), writing a span of a finished answer again in place (revise mode), and keeping every
answer's recorded denoising for replaying it.

Filling and revising are one engine primitive, an answer template (`engine.fill`): `/fill` sends the text as
the user's turn and asks for an answer that is that text with its holes denoised; revising asks again for
the answer's own prompt with the answer as the template, the span a hole of its own length. A revision is
saved like a regenerated answer (`store.add_revision`), and the conversation keeps its prefix cache: the
prompt is the one the answer was made for and the text before the span is the old answer's start, so the
engine encodes only what follows the longest prefix they share (see engine/generation/fill_run.py).
"""

from __future__ import annotations

from typing import Any, Sequence

from engine.errors import InputError
from engine.fill import FillTemplate, parse_fill, revision_template

from .conversation_path import engine_history
from .generation_state import Generation
from .store import Message, StoreError

# The turns after an answer were written from it as it is: like regenerating, revising is for the last answer.
LAST_ANSWER_ONLY = "Only the last answer can be revised: the turns after it were written from it as it is."
NO_RECORDING = ("This answer has no recorded denoising (recording was off, it came from a server, or the "
                "conversation's size cap dropped it).")


class DiffusionTurns:
    """Needs the session's `store`, `view`, `model`, `messages`, `generation`, `_ready`, `send` and `_start`."""

    store: Any
    view: Any

    async def send_fill(self, text: str) -> bool:
        """Send `text` (with `___` / `[...]` holes) as the user's turn, answered by the text with its holes
        filled; a text the template syntax refuses is one notice, and nothing is saved."""
        try:
            template = parse_fill(text)
        except InputError as exc:
            self.view.notify(f"Not sent: {exc}.", "error")
            return False
        if not self._local("Filling in a template"):
            return False
        return await self.send(text, fill=template)

    async def revise(self, message_id: int, start: int, end: int) -> bool:
        """Denoise characters `start:end` of an answer on the path again, everything around them fixed; the
        result is a new revision of that answer. False, with a notice, when it cannot start."""
        if self._ready(()) is None or not self._local("Re-denoising a span"):
            return False
        index = next((i for i, m in enumerate(self.messages) if m.id == message_id and m.role == "assistant"), None)
        if index is None:
            self.view.notify("That answer is no longer on this conversation's path.", "warning")
            return False
        message = self.messages[index]
        if index != len(self.messages) - 1:
            self.view.notify(LAST_ANSWER_ONLY, "warning")
            return False
        if message.status == "error":
            self.view.notify("A failed answer cannot be revised: regenerate it (ctrl+g).", "warning")
            return False
        try:
            template = revision_template(message.content, start, end)
        except InputError as exc:
            self.view.notify(str(exc), "warning")
            return False
        answer = await self.view.start_answer(message_id)
        # The messages that produced the answer, and the same conversation key: the engine's cache serves them.
        self._start(self.model, answer, engine_history(self.messages[:index]), message_id, template, "revise")
        return True

    def refill(self, answer: Message, prompt: Sequence[Message]) -> FillTemplate | None:
        """Regenerating a `/fill` answer fills its user turn's template again (other answers: None)."""
        if answer.role != "assistant" or (answer.stats or {}).get("fill") != "fill" or not prompt:
            return None
        try:
            return parse_fill(prompt[-1].content)
        except InputError:
            return None

    def _local(self, what: str) -> bool:
        model = self.model
        if model is not None and model.remote:
            self.view.notify(f"{what} needs the local engine: a server only writes whole answers.", "warning")
            return False
        return True

    def _show_filled(self, generation: Generation, spans: Sequence[tuple[int, int]]) -> None:
        if generation.fill_kind is None:
            return
        generation.filled_spans = tuple(tuple(span) for span in spans)
        if not generation.detached:
            self.view.show_filled(generation.answer, generation.filled_spans)

    # ---- recorded trajectories --------------------------------------------------------------------------

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

    def recorded_trajectory(self, message_id: int) -> bytes | None:
        """The shown revision's recording of an answer; None, with a notice, when there is none."""
        try:
            message = self.store.get_message(message_id)
            revision = next((r for r in self.store.revisions(message_id) if r.number == message.revision), None)
            data = self.store.load_trajectory(revision.id) if revision is not None else None
        except StoreError as exc:
            self.view.notify(str(exc), "error")
            return None
        if data is None:
            self.view.notify(NO_RECORDING)
        return data
