"""The conversation store: one SQLite file, opened through the schema ladder, and its reads and writes.

One `ConversationStore` holds one connection and is meant for the UI thread only (sqlite3's default
`check_same_thread=True` enforces that): workers hand results back to the UI thread, which writes them.
Every write runs in its own explicit transaction, and the database uses WAL journaling, so a crash
mid-write keeps the last committed state.

A file that is not a readable diffusion-chat database (corrupt, another program's, damaged, or from a
newer version) raises `StoreError` naming the path, and is left exactly as it was. See `schema` for how
older files are upgraded.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import platformdirs

from . import schema
from .export import to_markdown
from .records import (
    ROLES,
    STATUSES,
    Conversation,
    ConversationSummary,
    Message,
    NotFoundError,
    SearchHit,
    StoreError,
    check_choice,
    message_from_row,
    one_line,
    to_json,
    to_time,
)
from .search import search

DATA_DIR_ENV = "DIFFUSION_CHAT_DATA_DIR"
DB_FILENAME = "conversations.sqlite3"

# The conversation's `think` flag has its own column; `set_setting`/`get_setting` reach it under this key
# so that all per-conversation settings go through one pair of calls.
THINK_SETTING = "think"

_MESSAGE_COLUMNS = "id, conversation_id, role, content, reasoning, images, status, stats, created_at"


def default_db_path() -> Path:
    """Where conversations live: `$DIFFUSION_CHAT_DATA_DIR` if set, else the platform's user data folder."""
    folder = os.environ.get(DATA_DIR_ENV) or platformdirs.user_data_dir("diffusion-chat")
    return Path(folder) / DB_FILENAME


class ConversationStore:
    """Conversations and their messages, kept in one SQLite file. Use from the UI thread only.

    `path` may be ":memory:" for a throwaway store; `clock` gives the time in seconds since the epoch.
    """

    def __init__(self, path: str | os.PathLike[str], *, clock: Callable[[], float] = time.time):
        self.path = Path(path)
        self._clock = clock
        in_memory = str(path) == ":memory:"
        try:
            if not in_memory:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._connection = sqlite3.connect(str(path))
        except (OSError, sqlite3.Error) as error:
            raise StoreError(f"cannot open the conversation database {self.path}: {error}") from None
        try:
            self._open(in_memory)
        except BaseException as error:
            self._connection.close()
            if not isinstance(error, sqlite3.Error):
                raise
            raise StoreError(
                f"cannot read the conversation database {self.path} ({error}); it was left untouched:"
                " move it aside to start a new one"
            ) from None

    def _open(self, in_memory: bool) -> None:
        connection = self._connection
        # Transactions are explicit (see _transaction), so DDL and DML commit or roll back together.
        connection.isolation_level = None
        # Read before writing anything: a corrupt, foreign or damaged file must fail here, untouched.
        version, self.full_text_search = schema.check(connection, self.path)
        connection.execute("PRAGMA foreign_keys = ON")
        if not in_memory:
            connection.execute("PRAGMA journal_mode = WAL")
        schema.upgrade(connection, self.path, version)
        if self.full_text_search:
            schema.ensure_full_text_index(connection, self.path)

    # -- plumbing ---------------------------------------------------------------------------------

    def _error(self, error: sqlite3.Error) -> StoreError:
        return StoreError(f"conversation database {self.path}: {error}")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        connection = self._connection
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
            except BaseException:
                # SQLite may already have rolled back after some errors (a full disk, say).
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        except sqlite3.Error as error:
            raise self._error(error) from None

    def _query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple]:
        try:
            cursor = self._connection.execute(sql, parameters)
            return cursor.fetchall()
        except sqlite3.Error as error:
            raise self._error(error) from None

    def _touch(self, connection: sqlite3.Connection, conversation_id: int) -> None:
        connection.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (self._clock(), conversation_id))

    def _require_conversation(self, connection: sqlite3.Connection, conversation_id: int) -> None:
        if connection.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone() is None:
            raise NotFoundError(f"no conversation with id {conversation_id}")

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> ConversationStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- conversations ------------------------------------------------------------------------------

    def create(self, title: str, model: str, settings: dict[str, Any] | None = None, think: bool = False) -> Conversation:
        """Start a conversation. `settings` are its sampler overrides (engine.Settings field -> value)."""
        settings = dict(settings or {})
        if THINK_SETTING in settings:
            raise ValueError("pass thinking as the `think` argument, not inside settings")
        now = self._clock()
        with self._transaction() as connection:
            cursor = connection.execute(
                "INSERT INTO conversations (title, model, settings, think, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (one_line(title), model, to_json(settings), int(bool(think)), now, now),
            )
        return self.get(cursor.lastrowid)

    def list(self) -> list[ConversationSummary]:
        """All conversations, most recently changed first."""
        rows = self._query(
            "SELECT c.id, c.title, c.model, c.created_at, c.updated_at,"
            " (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id)"
            " FROM conversations c ORDER BY c.updated_at DESC, c.id DESC"
        )
        return [
            ConversationSummary(conversation_id, title, model, count, to_time(created), to_time(updated))
            for conversation_id, title, model, created, updated, count in rows
        ]

    def get(self, conversation_id: int) -> Conversation:
        """A conversation with its messages in the order they were added."""
        rows = self._query(
            "SELECT id, title, model, settings, think, created_at, updated_at FROM conversations WHERE id = ?",
            (conversation_id,),
        )
        if not rows:
            raise NotFoundError(f"no conversation with id {conversation_id}")
        _, title, model, settings, think, created, updated = rows[0]
        messages = self._query(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? ORDER BY id", (conversation_id,)
        )
        return Conversation(
            id=conversation_id,
            title=title,
            model=model,
            settings=json.loads(settings),
            think=bool(think),
            created_at=to_time(created),
            updated_at=to_time(updated),
            messages=tuple(message_from_row(row) for row in messages),
        )

    def rename(self, conversation_id: int, title: str) -> None:
        with self._transaction() as connection:
            self._require_conversation(connection, conversation_id)
            connection.execute("UPDATE conversations SET title = ? WHERE id = ?", (one_line(title), conversation_id))
            self._touch(connection, conversation_id)

    def delete(self, conversation_id: int) -> None:
        """Delete a conversation and all its messages."""
        with self._transaction() as connection:
            self._require_conversation(connection, conversation_id)
            connection.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    def set_setting(self, conversation_id: int, key: str, value: Any) -> None:
        """Set one per-conversation setting; `None` removes a sampler override. Key "think" is the thinking flag."""
        with self._transaction() as connection:
            self._require_conversation(connection, conversation_id)
            if key == THINK_SETTING:
                if not isinstance(value, bool):
                    raise ValueError(f"the think setting must be true or false, got {value!r}")
                connection.execute("UPDATE conversations SET think = ? WHERE id = ?", (int(value), conversation_id))
            else:
                (stored,) = connection.execute(
                    "SELECT settings FROM conversations WHERE id = ?", (conversation_id,)
                ).fetchone()
                settings = json.loads(stored)
                if value is None:
                    settings.pop(key, None)
                else:
                    settings[key] = value
                connection.execute(
                    "UPDATE conversations SET settings = ? WHERE id = ?", (to_json(settings), conversation_id)
                )
            self._touch(connection, conversation_id)

    def get_setting(self, conversation_id: int, key: str, default: Any = None) -> Any:
        rows = self._query("SELECT settings, think FROM conversations WHERE id = ?", (conversation_id,))
        if not rows:
            raise NotFoundError(f"no conversation with id {conversation_id}")
        settings, think = rows[0]
        if key == THINK_SETTING:
            return bool(think)
        return json.loads(settings).get(key, default)

    # -- messages -----------------------------------------------------------------------------------

    def add_message(
        self,
        conversation_id: int,
        role: str,
        content: str,
        reasoning: str = "",
        images: Sequence[str] = (),
        status: str = "complete",
        stats: dict[str, Any] | None = None,
    ) -> Message:
        """Append a message. `images` are attachment file names; `stats` is any JSON-able dict (speed, steps...)."""
        check_choice("role", role, ROLES)
        check_choice("status", status, STATUSES)
        images = [str(image) for image in images]
        with self._transaction() as connection:
            self._require_conversation(connection, conversation_id)
            cursor = connection.execute(
                "INSERT INTO messages (conversation_id, role, content, reasoning, images, status, stats, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id, role, content, reasoning, to_json(images), status,
                    None if stats is None else to_json(stats), self._clock(),
                ),
            )
            self._touch(connection, conversation_id)
        return self.get_message(cursor.lastrowid)

    def get_message(self, message_id: int) -> Message:
        rows = self._query(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = ?", (message_id,))
        if not rows:
            raise NotFoundError(f"no message with id {message_id}")
        return message_from_row(rows[0])

    def update_message(
        self,
        message_id: int,
        *,
        content: str | None = None,
        reasoning: str | None = None,
        status: str | None = None,
        stats: dict[str, Any] | None = None,
    ) -> Message:
        """Change the given fields of a message (e.g. a streamed reply once it finishes or is cancelled)."""
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = content
        if reasoning is not None:
            changes["reasoning"] = reasoning
        if status is not None:
            check_choice("status", status, STATUSES)
            changes["status"] = status
        if stats is not None:
            changes["stats"] = to_json(stats)
        with self._transaction() as connection:
            row = connection.execute("SELECT conversation_id FROM messages WHERE id = ?", (message_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no message with id {message_id}")
            if changes:
                # Column names come from the fixed keys above, never from the caller.
                assignments = ", ".join(f"{column} = ?" for column in changes)
                connection.execute(f"UPDATE messages SET {assignments} WHERE id = ?", (*changes.values(), message_id))
                self._touch(connection, row[0])
        return self.get_message(message_id)

    def delete_message(self, message_id: int) -> None:
        """Remove one message, e.g. a reply that is about to be regenerated."""
        with self._transaction() as connection:
            row = connection.execute("SELECT conversation_id FROM messages WHERE id = ?", (message_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no message with id {message_id}")
            connection.execute("DELETE FROM messages WHERE id = ?", (message_id,))
            self._touch(connection, row[0])

    # -- search and export --------------------------------------------------------------------------

    def search(self, text: str, limit: int = 50) -> list[SearchHit]:
        """Conversations whose title, and messages whose text, contain every word of `text`; newest first."""
        return search(self._query, self.full_text_search, text, limit)

    def export_markdown(self, conversation_id: int) -> str:
        """The conversation as Markdown: title, model and settings, then each message under its role."""
        return to_markdown(self.get(conversation_id))
