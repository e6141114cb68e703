"""The rules of the turns only a diffusion chat has, without Textual: filling the person's text with holes
(`/fill`), writing a span of a finished answer again in place (revise mode), and reading an answer's recorded
denoising back for the replay view. `ChatSession` applies them.

Filling and revising are one engine primitive, an answer template (`engine.generation.fill`): `/fill` sends the text as
the user's turn and asks for an answer that is that text with its holes denoised; revising asks again for
the answer's own prompt with the answer as the template, the span a hole of its own length. A revision is
saved like a regenerated answer (`store.add_revision`), and the conversation keeps its prefix cache: the
prompt is the one the answer was made for and the text before the span is the old answer's start, so the
engine encodes only what follows the longest prefix they share (see engine/generation/fill_run.py).
"""

from __future__ import annotations

from typing import Sequence

from engine.errors import InputError
from engine.events import ModelInfo
from engine.generation.fill import FillTemplate, parse_fill

from ..records import Message
from ..store import ConversationStore, StoreError
from .view import ChatView

# The turns after an answer were written from it as it is: like regenerating, revising is for the last answer.
LAST_ANSWER_ONLY = "Only the last answer can be revised: the turns after it were written from it as it is."
NO_RECORDING = ("This answer has no recorded denoising (recording was off, it came from a server, or the "
                "conversation's size cap dropped it).")


def revise_refusal(messages: Sequence[Message], message_id: int) -> str | None:
    """Why the answer `message_id` of the shown path cannot be revised (None: it can)."""
    index = next((i for i, m in enumerate(messages) if m.id == message_id and m.role == "assistant"), None)
    if index is None:
        return "That answer is no longer on this conversation's path."
    if index != len(messages) - 1:
        return LAST_ANSWER_ONLY
    if messages[index].status == "error":
        return "A failed answer cannot be revised: regenerate it (ctrl+g)."
    if not messages[index].content:
        return "This answer has no text to revise."
    return None


def remote_refusal(model: ModelInfo | None, what: str) -> str | None:
    """Templates need the local engine: a server only writes whole answers."""
    if model is not None and model.remote:
        return f"{what} needs the local engine: a server only writes whole answers."
    return None


def refill(answer: Message, prompt: Sequence[Message]) -> FillTemplate | None:
    """Regenerating a `/fill` answer fills its user turn's template again (other answers: None)."""
    if answer.role != "assistant" or (answer.stats or {}).get("fill") != "fill" or not prompt:
        return None
    try:
        return parse_fill(prompt[-1].content)
    except InputError:
        return None


def recorded_trajectory(store: ConversationStore, view: ChatView, message_id: int) -> bytes | None:
    """The shown revision's recording of an answer; None, with a notice, when there is none."""
    try:
        message = store.get_message(message_id)
        revision = next((r for r in store.revisions(message_id) if r.number == message.revision), None)
        data = store.load_trajectory(revision.id) if revision is not None else None
    except StoreError as exc:
        view.notify(str(exc), "error")
        return None
    if data is None:
        view.notify(NO_RECORDING)
    return data
