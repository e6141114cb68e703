"""The chat screen's keys for what only a diffusion chat does (`ChatScreen` delegates to it): revise mode on
an answer (`v` on it; the session says whether it may; the `SpanSelector` sends the chosen span) and the
replay view of its recorded denoising (ctrl+r). `/fill` is typed in the prompt (`prompt_commands`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.errors import InputError
from engine.recording.trajectory import decode

from ..widgets.answer_text import SpanSelector
from ..widgets.messages import AssistantMessage
from ..words import count
from .replay import ReplayScreen

if TYPE_CHECKING:
    from .chat import ChatScreen


class DiffusionKeys:
    def __init__(self, screen: "ChatScreen"):
        self.screen = screen

    async def revise_answer(self) -> None:
        """Revise mode on the focused (else the last) answer."""
        target = self.screen._target_answer()
        if target is None:
            self.screen.notify("There is no answer to revise yet.")
            return
        target.scroll_visible(animate=False)
        await target.action_revise()

    async def revise_requested(self, event: AssistantMessage.ReviseRequested) -> None:
        event.stop()
        refusal = self.screen.session.can_revise(event.widget.message_id)
        if refusal is not None:
            self.screen.notify(refusal, markup=False)
            return
        await event.widget.enter_revise()

    async def revise(self, event: SpanSelector.Revise) -> None:
        event.stop()
        await self.screen.session.revise(event.message_id, event.start, event.end)

    def replay(self) -> None:
        """The replay view of the focused (else the last) answer's recorded denoising."""
        target = self.screen._target_answer()
        if target is None or target.message_id is None:
            self.screen.notify("There is no saved answer to replay yet.")
            return
        data = self.screen.session.recorded_trajectory(target.message_id)
        if data is None:
            return
        try:
            trajectory = decode(data)   # once, on opening: the view then only hands out frames
        except InputError as exc:
            self.screen.notify(f"The recording cannot be read: {exc}", severity="error")
            return
        if not trajectory.frames:
            self.screen.notify("The recording has no denoising steps to replay.")
            return
        place = target.place
        revision = f", revision {place.number}/{place.count}" if place is not None and place.count > 1 else ""
        shown = [answer.message_id for answer in self.screen.transcript.query(AssistantMessage)]
        number = shown.index(target.message_id) + 1
        meta = trajectory.meta
        size = f"{count(len(trajectory.frames), 'step')} in {count(len(trajectory.blocks), 'block')}"
        self.screen.app.push_screen(ReplayScreen(
            trajectory, f"Replay of answer {number}{revision} · {meta.get('model') or '?'} · {size} · Esc closes",
            self.screen.canvas_mode))
