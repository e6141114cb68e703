"""What the conversation store hands out: frozen dataclasses and its errors, plain data with no SQLite and no
Textual, so widgets and screens can show them without reaching into the store (`tui.store` re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
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


@dataclass(frozen=True)
class Place:
    """Where a shown message sits among its alternatives: a user message among the edits sent at its place
    (branches), an assistant message among its revisions (regenerated answers). `number` counts from 1."""

    message_id: int
    number: int
    count: int
