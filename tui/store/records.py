"""What the store hands out (frozen dataclasses), its errors, and the small conversions between rows and them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

ROLES = ("system", "user", "assistant")
STATUSES = ("complete", "cancelled", "error")


class StoreError(Exception):
    """The conversation database cannot be used; the message is one line and names the file."""


class NotFoundError(StoreError):
    """No conversation, message or revision has the given id."""


@dataclass(frozen=True)
class Message:
    id: int
    conversation_id: int
    parent_id: int | None  # the message this one follows; None for a first message
    role: str
    content: str  # for an assistant message: its current revision's, as are reasoning, status and stats
    reasoning: str
    images: tuple[str, ...]
    status: str
    stats: dict[str, Any] | None
    revision: int | None  # the number of the current revision; None for user and system messages
    created_at: datetime


@dataclass(frozen=True)
class Revision:
    """One version of an assistant message; regenerating adds one."""

    id: int
    message_id: int
    number: int  # 1, 2, ... per message, in the order they were made
    content: str
    reasoning: str
    status: str
    stats: dict[str, Any] | None
    settings: dict[str, Any] | None  # the sampler settings it was made with
    created_at: datetime


@dataclass(frozen=True)
class Conversation:
    id: int
    title: str
    model: str
    think: bool
    system_prompt: str | None
    created_at: datetime
    updated_at: datetime
    messages: tuple[Message, ...] = field(default=())  # the current path: root to current leaf


@dataclass(frozen=True)
class ConversationSummary:
    id: int
    title: str
    model: str
    message_count: int  # messages on the current path, as `get` returns them
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class SearchHit:
    conversation_id: int
    conversation_title: str
    message_id: int | None  # None when the title matched
    role: str | None
    snippet: str  # a short plain-text excerpt around the first matching word
    timestamp: datetime  # when the message was written, or when a matching conversation last changed


def message_from_row(row: tuple) -> Message:
    message_id, conversation_id, parent_id, role, content, reasoning, images, status, stats, revision, created = row
    return Message(
        id=message_id,
        conversation_id=conversation_id,
        parent_id=parent_id,
        role=role,
        content=content,
        reasoning=reasoning,
        images=tuple(json.loads(images)),
        status=status,
        stats=from_json(stats),
        revision=revision,
        created_at=to_time(created),
    )


def revision_from_row(row: tuple) -> Revision:
    revision_id, message_id, number, content, reasoning, status, stats, settings, created = row
    return Revision(
        id=revision_id,
        message_id=message_id,
        number=number,
        content=content,
        reasoning=reasoning,
        status=status,
        stats=from_json(stats),
        settings=from_json(settings),
        created_at=to_time(created),
    )


def to_time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def to_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"cannot save {value!r}: {error}") from None


def from_json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def one_line(title: str) -> str:
    return " ".join(title.split()) or "Untitled"


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
