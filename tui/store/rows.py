"""The store's conversions between SQLite rows and the records of `tui.records`, and its small value checks."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from ..records import Message, Revision


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


def clean_title(title: str) -> str:
    """A conversation title as stored: whitespace runs (newlines too) as one space, nothing left = "Untitled"."""
    return " ".join(title.split()) or "Untitled"


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
