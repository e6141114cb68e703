"""Schema 1, the first released one: conversations and their messages in a flat list.

This is exactly what diffusion-chat wrote before the ladder existed (user_version 1), so files from then
are version-1 files of this ladder. Never edit it: a change belongs in a new step.
The full-text index is not part of any step (see `schema.ensure_full_text_index`); it exists only where
SQLite has FTS5.
"""

from __future__ import annotations

import sqlite3

from . import Migration, run

TABLES = """
CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    model TEXT NOT NULL,
    settings TEXT NOT NULL DEFAULT '{}',
    think INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content TEXT NOT NULL,
    reasoning TEXT NOT NULL DEFAULT '',
    images TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL DEFAULT 'complete' CHECK (status IN ('complete', 'cancelled', 'error')),
    stats TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX messages_by_conversation ON messages(conversation_id, id);
CREATE INDEX conversations_by_recency ON conversations(updated_at);
"""


def upgrade(connection: sqlite3.Connection) -> None:
    run(connection, TABLES)


MIGRATION = Migration(1, "conversations and messages", upgrade)
