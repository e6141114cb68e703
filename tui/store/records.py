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
    """No conversation or message has the given id."""


@dataclass(frozen=True)
class Message:
    id: int
    conversation_id: int
    role: str
    content: str
    reasoning: str
    images: tuple[str, ...]
    status: str
    stats: dict[str, Any] | None
    created_at: datetime


@dataclass(frozen=True)
class Conversation:
    id: int
    title: str
    model: str
    settings: dict[str, Any]
    think: bool
    created_at: datetime
    updated_at: datetime
    messages: tuple[Message, ...] = field(default=())


@dataclass(frozen=True)
class ConversationSummary:
    id: int
    title: str
    model: str
    message_count: int
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
    message_id, conversation_id, role, content, reasoning, images, status, stats, created = row
    return Message(
        id=message_id,
        conversation_id=conversation_id,
        role=role,
        content=content,
        reasoning=reasoning,
        images=tuple(json.loads(images)),
        status=status,
        stats=None if stats is None else json.loads(stats),
        created_at=to_time(created),
    )


def to_time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def to_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"cannot save {value!r}: {error}") from None


def one_line(title: str) -> str:
    return " ".join(title.split()) or "Untitled"


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
