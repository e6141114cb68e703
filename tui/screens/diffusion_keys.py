"""The chat screen's keys for what only a diffusion chat does (a mixin of `ChatScreen`): revise mode on an
answer (`v` on it; the `SpanSelector` sends the chosen span) and the replay view of its recorded denoising
(ctrl+r). `/fill` is typed in the prompt (`prompt_commands`)."""

from __future__ import annotations

from engine.errors import InputError
from engine.trajectory import decode

from ..widgets.answer_text import SpanSelector
from ..widgets.messages import AssistantMessage
from .replay import ReplayScreen


class DiffusionKeys:
    async def action_revise_answer(self) -> None:
        """Revise mode on the focused (else the last) answer."""
        target = self._target_answer()
        if target is None:
            self.notify("There is no answer to revise yet.")
            return
        target.scroll_visible(animate=False)
        await target.action_revise()

    async def on_assistant_message_revise_requested(self, event: AssistantMessage.ReviseRequested) -> None:
        event.stop()
        refusal = self.session.can_revise(event.widget.message_id)
        if refusal is not None:
            self.notify(refusal, markup=False)
            return
        await event.widget.enter_revise()

    async def on_span_selector_revise(self, event: SpanSelector.Revise) -> None:
        # (Textual's naming convention: an @on handler would not be found on a mixin)
        event.stop()
        await self.session.revise(event.message_id, event.start, event.end)

    def action_replay(self) -> None:
        """The replay view of the focused (else the last) answer's recorded denoising."""
        target = self._target_answer()
        if target is None or target.message_id is None:
            self.notify("There is no saved answer to replay yet.")
            return
        data = self.session.recorded_trajectory(target.message_id)
        if data is None:
            return
        try:
            trajectory = decode(data)   # once, on opening: the view then only hands out frames
        except InputError as exc:
            self.notify(f"The recording cannot be read: {exc}", severity="error")
            return
        if not trajectory.frames:
            self.notify("The recording has no denoising steps to replay.")
            return
        place = target.place
        revision = f", revision {place.number}/{place.count}" if place is not None and place.count > 1 else ""
        number = [a.message_id for a in self.transcript.query(AssistantMessage)].index(target.message_id) + 1
        meta = trajectory.meta
        self.app.push_screen(ReplayScreen(
            trajectory, f"Replay of answer {number}{revision} · {meta.get('model') or '?'} · "
                        f"{len(trajectory.frames)} steps in {len(trajectory.blocks)} blocks · Esc closes",
            self.canvas_mode))
