"""Search: SQLite's FTS5 full-text index where this SQLite has it, LIKE matching otherwise.

Either way each word of the query must appear in the same message or title (as a word prefix with FTS5,
as a substring with LIKE), and results come newest first. Any input is safe: words reach SQLite as quoted
strings or bound LIKE patterns, never as query syntax, and words without letters or digits are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ..records import SearchHit
from .rows import to_time

# Runs one SELECT and returns its rows; the store's version turns sqlite3 errors into StoreError.
Query = Callable[[str, Sequence[Any]], list[tuple]]


def search(query: Query, full_text_search: bool, text: str, limit: int = 50) -> list[SearchHit]:
    """Conversations whose title, and messages whose text, contain every word of `text`; newest first."""
    words = [word for word in text.split() if any(character.isalnum() for character in word)]
    if not words:
        return []
    if full_text_search:
        # Each word becomes a quoted FTS5 string (inner quotes doubled) with a prefix star, so
        # `"` `*` `:` `(` or NEAR in the input are plain text; words are ANDed.
        match = " ".join('"' + word.replace('"', '""') + '"*' for word in words)
        title_rows = query(
            "SELECT c.id, c.title, c.updated_at FROM conversations_fts"
            " JOIN conversations c ON c.id = conversations_fts.rowid"
            " WHERE conversations_fts MATCH ? ORDER BY c.updated_at DESC, c.id DESC LIMIT ?",
            (match, limit),
        )
        message_rows = query(
            "SELECT c.id, c.title, m.id, m.role, m.content, m.created_at FROM messages_fts"
            " JOIN messages m ON m.id = messages_fts.rowid JOIN conversations c ON c.id = m.conversation_id"
            " WHERE messages_fts MATCH ? ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
            (match, limit),
        )
    else:
        patterns = ["%" + _escape_like(word) + "%" for word in words]
        title_rows = query(
            "SELECT id, title, updated_at FROM conversations WHERE "
            + " AND ".join(["title LIKE ? ESCAPE '\\'"] * len(words))
            + " ORDER BY updated_at DESC, id DESC LIMIT ?",
            (*patterns, limit),
        )
        message_rows = query(
            "SELECT c.id, c.title, m.id, m.role, m.content, m.created_at FROM messages m"
            " JOIN conversations c ON c.id = m.conversation_id WHERE "
            + " AND ".join(["m.content LIKE ? ESCAPE '\\'"] * len(words))
            + " ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
            (*patterns, limit),
        )
    hits = [
        SearchHit(conversation_id, title, None, None, snippet(title, words), to_time(updated))
        for conversation_id, title, updated in title_rows
    ]
    hits += [
        SearchHit(conversation_id, title, message_id, role, snippet(content, words), to_time(created))
        for conversation_id, title, message_id, role, content, created in message_rows
    ]
    return hits[:limit]


def snippet(text: str, words: Sequence[str], before: int = 30, width: int = 100) -> str:
    """A one-line excerpt of `text` starting a little before the earliest query word found in it."""
    flat = " ".join(text.split())
    pattern = "|".join(re.escape(word) for word in words)
    found = re.search(pattern, flat, flags=re.IGNORECASE)
    start = max(0, found.start() - before) if found else 0
    excerpt = flat[start : start + width]
    if start > 0:
        excerpt = "…" + excerpt
    if start + width < len(flat):
        excerpt += "…"
    return excerpt


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
