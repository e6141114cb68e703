"""The SQL behind branches and revisions (schema 2).

Messages form a tree through `parent_id`; a conversation's shown path runs from a root to its
`current_leaf_id`. Every parent is an older message (the store only links to existing ones), so walking up
always ends at a root. An assistant message shows one of its revisions, copied onto its row.
"""

from __future__ import annotations

import sqlite3

MESSAGE_COLUMNS = (
    "m.id, m.conversation_id, m.parent_id, m.role, m.content, m.reasoning, m.images, m.status, m.stats,"
    " m.current_revision, m.created_at"
)
REVISION_COLUMNS = "r.id, r.message_id, r.number, r.content, r.reasoning, r.status, r.stats, r.settings, r.created_at"

# The current path of conversation ?, root first.
PATH = (
    "WITH RECURSIVE path(id, depth) AS ("
    " SELECT current_leaf_id, 0 FROM conversations WHERE id = ? AND current_leaf_id IS NOT NULL"
    " UNION ALL SELECT m.parent_id, path.depth + 1 FROM path JOIN messages m ON m.id = path.id"
    " WHERE m.parent_id IS NOT NULL)"
    f" SELECT {MESSAGE_COLUMNS} FROM path JOIN messages m ON m.id = path.id ORDER BY path.depth DESC"
)

# Every conversation with the length of its current path, most recently changed first.
SUMMARIES = (
    "WITH RECURSIVE path(conversation_id, message_id) AS ("
    " SELECT id, current_leaf_id FROM conversations WHERE current_leaf_id IS NOT NULL"
    " UNION ALL SELECT path.conversation_id, m.parent_id FROM path JOIN messages m ON m.id = path.message_id"
    " WHERE m.parent_id IS NOT NULL),"
    " counts(conversation_id, n) AS (SELECT conversation_id, COUNT(*) FROM path GROUP BY conversation_id)"
    " SELECT c.id, c.title, c.model, c.created_at, c.updated_at, COALESCE(counts.n, 0)"
    " FROM conversations c LEFT JOIN counts ON counts.conversation_id = c.id"
    " ORDER BY c.updated_at DESC, c.id DESC"
)

# The messages sharing a parent (? and ? are the conversation and the parent, which may be NULL).
SIBLINGS = f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.conversation_id = ? AND m.parent_id IS ? ORDER BY m.id"


def newest_leaf(connection: sqlite3.Connection, message_id: int) -> int:
    """The newest message without replies in the subtree under `message_id` (itself if it has none)."""
    (leaf_id,) = connection.execute(
        "WITH RECURSIVE below(id) AS (SELECT ? UNION ALL"
        " SELECT m.id FROM messages m JOIN below ON m.parent_id = below.id)"
        " SELECT MAX(id) FROM below WHERE NOT EXISTS (SELECT 1 FROM messages c WHERE c.parent_id = below.id)",
        (message_id,),
    ).fetchone()
    return leaf_id


def insert_revision(connection: sqlite3.Connection, message_id: int, number: int, content: str, reasoning: str,
                    status: str, stats: str | None, settings: str | None, now: float) -> int:
    return connection.execute(
        "INSERT INTO revisions (message_id, number, content, reasoning, status, stats, settings, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (message_id, number, content, reasoning, status, stats, settings, now),
    ).lastrowid


def show_revision(connection: sqlite3.Connection, message_id: int, number: int) -> bool:
    """Copy revision `number` onto its message row; False if the message has no such revision."""
    # The copy keeps the full-text index (a trigger on messages.content) in step with what is shown.
    return connection.execute(
        "UPDATE messages SET (content, reasoning, status, stats, current_revision) ="
        " (SELECT content, reasoning, status, stats, number FROM revisions WHERE message_id = ? AND number = ?)"
        " WHERE id = ? AND EXISTS (SELECT 1 FROM revisions WHERE message_id = ? AND number = ?)",
        (message_id, number, message_id, message_id, number),
    ).rowcount > 0
