"""Schema 2: a system prompt per conversation, messages as a tree (branches), revisions of assistant
messages, and recorded denoising trajectories.

- `conversations.system_prompt`: NULL when there is none.
- `messages.parent_id`: the message this one answers or follows (NULL for a first message). Editing and
  resending adds a sibling, so the old continuation stays as another branch. `conversations.current_leaf_id`
  is where the shown path ends; the path is walked from there up to a root.
- `revisions`: each assistant message has numbered revisions (regenerate adds one), and
  `messages.current_revision` names the shown one. The message row's content, reasoning, status and
  stats always mirror that revision, so the full-text index, export and older readers need no change.
- `trajectories`: one compressed recording of the denoising per revision, at most.

Upgrading a version-1 file turns each conversation's list into a chain (each message's parent is the one
before it, the last one is the current leaf), and gives every assistant message revision 1 from its row.

`conversations.settings` stays: nothing has written anything but '{}' to it, and dropping it would need
SQLite 3.35 (ALTER TABLE DROP COLUMN) or a rebuild of the table with its full-text triggers. The store
no longer reads it; sampler settings are recorded per revision now.

`parent_id` deliberately has no ON DELETE CASCADE. A cascade would delete a chain one level at a time,
and SQLite stops at 1000 levels ("too many levels of trigger recursion"). Messages are only deleted
together with their conversation, in one statement, and that satisfies the plain reference.
"""

from __future__ import annotations

import sqlite3

from . import Migration, run

SQL = """
ALTER TABLE conversations ADD COLUMN system_prompt TEXT;
ALTER TABLE conversations ADD COLUMN current_leaf_id INTEGER REFERENCES messages(id) ON DELETE SET NULL;
ALTER TABLE messages ADD COLUMN parent_id INTEGER REFERENCES messages(id);
ALTER TABLE messages ADD COLUMN current_revision INTEGER;
CREATE INDEX messages_by_parent ON messages(parent_id, id);

CREATE TABLE revisions (
    id INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    number INTEGER NOT NULL CHECK (number >= 1),
    content TEXT NOT NULL,
    reasoning TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'complete' CHECK (status IN ('complete', 'cancelled', 'error')),
    stats TEXT,
    settings TEXT,
    created_at REAL NOT NULL,
    UNIQUE (message_id, number)
);

CREATE TABLE trajectories (
    revision_id INTEGER PRIMARY KEY REFERENCES revisions(id) ON DELETE CASCADE,
    data BLOB NOT NULL,
    bytes INTEGER NOT NULL,
    created_at REAL NOT NULL
);

-- Version-1 conversations were lists in id order: make each a chain.
UPDATE messages SET parent_id = (
    SELECT MAX(previous.id) FROM messages previous
    WHERE previous.conversation_id = messages.conversation_id AND previous.id < messages.id
);
UPDATE conversations SET current_leaf_id = (
    SELECT MAX(m.id) FROM messages m WHERE m.conversation_id = conversations.id
);
INSERT INTO revisions (message_id, number, content, reasoning, status, stats, settings, created_at)
    SELECT id, 1, content, reasoning, status, stats, NULL, created_at FROM messages WHERE role = 'assistant';
UPDATE messages SET current_revision = 1 WHERE role = 'assistant';
"""


def upgrade(connection: sqlite3.Connection) -> None:
    run(connection, SQL)


MIGRATION = Migration(2, "system prompt, branches, revisions and trajectories", upgrade)
