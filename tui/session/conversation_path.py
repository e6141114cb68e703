"""What the chat session derives from a conversation's saved path, without Textual: the messages the engine
gets, where each shown message sits among its alternatives, and the stats an answer is saved with.

The store is the source of truth: after every change the session reads the current path again and rebuilds
the engine's history from it, so a regenerated answer, an edit or a branch switch cannot leave the history
and the transcript telling different stories.
"""

from __future__ import annotations

from typing import Sequence

from engine.events import Finished, Started

from ..records import Message, Place
from ..store import ConversationStore


def engine_history(messages: Sequence[Message]) -> list[dict]:
    """The turns the engine gets for a path (root first). A failed answer is shown, never sent back."""
    turns = []
    for message in messages:
        if message.role == "user":
            turns.append(user_turn(message.content, message.images))
        elif message.role == "assistant" and message.status != "error":
            turns.append({"role": "assistant", "content": message.content})
    return turns


def request_messages(system_prompt: str | None, history: Sequence[dict]) -> tuple[dict, ...]:
    """The chat messages of a request: the conversation's system prompt (through the chat template, like
    any turn), then the history."""
    system = ({"role": "system", "content": system_prompt},) if system_prompt else ()
    return (*system, *history)


def user_turn(text: str, images: Sequence[str]) -> dict:
    """A user message for the engine. Images stay in their own turn, so later turns still show them to the
    model and the conversation's prompt keeps its prefix (and its cache)."""
    if not images:
        return {"role": "user", "content": text}
    return {"role": "user", "content": [*({"type": "image", "path": path} for path in images),
                                         {"type": "text", "text": text}]}


def place_of(store: ConversationStore, message: Message) -> Place:
    if message.role == "assistant":
        return Place(message.id, message.revision or 1, len(store.revisions(message.id)))
    siblings = [sibling.id for sibling in store.siblings(message.id)]
    return Place(message.id, siblings.index(message.id) + 1, len(siblings))


def places(store: ConversationStore, messages: Sequence[Message]) -> dict[int, Place]:
    return {message.id: place_of(store, message) for message in messages}


def answer_stats(finished: Finished, started: Started | None, accepted_per_block: Sequence[Sequence[int]]) -> dict:
    """What an answer (or a revision) is saved with: enough to compare revisions made with other settings."""
    stats = finished.stats
    saved = {
        "finish_reason": finished.finish_reason,
        "steps_per_block": list(stats.steps_per_block),
        "accepted_per_step": [list(block) for block in accepted_per_block],
        "total_s": round(stats.total_s, 3),
        "prefill_s": round(stats.prefill_s, 3),
    }
    if tokens_counted(finished):
        saved.update(tokens_per_s=round(stats.tokens_per_s, 3), generated_tokens=stats.generated_tokens)
    if stats.prompt_tokens or tokens_counted(finished):
        saved["prompt_tokens"] = stats.prompt_tokens
    if started is not None:
        saved["encoded_tokens"] = started.encoded_tokens
    return saved


def tokens_counted(finished: Finished) -> bool:
    """Whether the answer's token counts are known: a server that sends no usage reports 0 tokens for an answer
    with text, which is no count (shown and saved as unknown, never as `0.0 tok/s`)."""
    return finished.stats.generated_tokens > 0 or not (finished.content or finished.reasoning)


def title_from(text: str, length: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= length else line[: length - 1] + "…"
