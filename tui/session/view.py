"""What the chat session talks to: the view that shows the chat (the chat screen, or a fake in tests) and the
backend that writes answers (the local engine thread, or a remote server). Both are Protocols: the session
decides, the view only draws, and the backend's events come back through `ChatSession.handle`."""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

from engine.events import Frame, GenerationRequest, Step

from ..records import Conversation, Message
from .conversation_path import Place


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
