"""Recorded denoising trajectories: one compressed blob per revision, capped in bytes per conversation.

The store keeps them so an answer can be replayed; they are the first thing to give up. When a new
recording takes a conversation over its cap, that conversation's oldest recordings are deleted until it
fits. A recording that alone is larger than the cap is not stored at all.
"""

from __future__ import annotations

import sqlite3

from ..records import NotFoundError


def save(connection: sqlite3.Connection, revision_id: int, data: bytes, cap: int, now: float) -> bool:
    """Store `data` for the revision inside the open transaction; False (and no change) if it is over `cap`."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"a trajectory is bytes, not {type(data).__name__}")
    data = bytes(data)
    row = connection.execute(
        "SELECT m.conversation_id FROM revisions r JOIN messages m ON m.id = r.message_id WHERE r.id = ?",
        (revision_id,),
    ).fetchone()
    if row is None:
        raise NotFoundError(f"no revision with id {revision_id}")
    if len(data) > cap:
        return False
    connection.execute(
        "INSERT OR REPLACE INTO trajectories (revision_id, data, bytes, created_at) VALUES (?, ?, ?, ?)",
        (revision_id, data, len(data), now),
    )
    others = connection.execute(
        "SELECT t.revision_id, t.bytes FROM trajectories t JOIN revisions r ON r.id = t.revision_id"
        " JOIN messages m ON m.id = r.message_id WHERE m.conversation_id = ? AND t.revision_id != ?"
        " ORDER BY t.created_at, t.revision_id",
        (row[0], revision_id),
    ).fetchall()
    total = len(data) + sum(size for _, size in others)
    for other_id, size in others:
        if total <= cap:
            break
        connection.execute("DELETE FROM trajectories WHERE revision_id = ?", (other_id,))
        total -= size
    return True


def load(connection: sqlite3.Connection, revision_id: int) -> bytes | None:
    row = connection.execute(
        "SELECT t.data FROM revisions r LEFT JOIN trajectories t ON t.revision_id = r.id WHERE r.id = ?",
        (revision_id,),
    ).fetchone()
    if row is None:
        raise NotFoundError(f"no revision with id {revision_id}")
    return row[0]
