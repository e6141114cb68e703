"""Saved conversations: a SQLite database in the user's data folder.

One `ConversationStore` holds one connection and is meant for the UI thread only (sqlite3's default
`check_same_thread=True` enforces that): workers hand results back to the UI thread, which writes them.
Every write runs in its own transaction, the database uses WAL journaling so a crash mid-write keeps
the last committed state, and `PRAGMA user_version` records the schema version for later migrations.

A file that is not a readable diffusion-chat database (corrupt, another program's, or from a newer
version) raises `StoreError` naming the path, and is left exactly as it was.

Search uses SQLite's FTS5 full-text index over message text and conversation titles when this SQLite
has FTS5, and falls back to LIKE matching otherwise; either way each word of the query must appear
(as a word prefix with FTS5, as a substring with LIKE) and results come newest first.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import platformdirs

DATA_DIR_ENV = "DIFFUSION_CHAT_DATA_DIR"
DB_FILENAME = "conversations.sqlite3"
SCHEMA_VERSION = 1

ROLES = ("system", "user", "assistant")
STATUSES = ("complete", "cancelled", "error")

# The conversation's `think` flag has its own column; `set_setting`/`get_setting` reach it under this key
# so that all per-conversation settings go through one pair of calls.
THINK_SETTING = "think"

_TABLES = """
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

# External-content FTS5 tables: the text lives once, in the tables above, and triggers keep the
# index in step with every insert, update and delete (including deletes cascaded from a conversation).
_FULL_TEXT_INDEX = """
CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, content='messages', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE conversations_fts USING fts5(
    title, content='conversations', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER conversations_fts_insert AFTER INSERT ON conversations BEGIN
    INSERT INTO conversations_fts(rowid, title) VALUES (new.id, new.title);
END;
CREATE TRIGGER conversations_fts_delete AFTER DELETE ON conversations BEGIN
    INSERT INTO conversations_fts(conversations_fts, rowid, title) VALUES ('delete', old.id, old.title);
END;
CREATE TRIGGER conversations_fts_update AFTER UPDATE OF title ON conversations BEGIN
    INSERT INTO conversations_fts(conversations_fts, rowid, title) VALUES ('delete', old.id, old.title);
    INSERT INTO conversations_fts(rowid, title) VALUES (new.id, new.title);
END;
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
INSERT INTO conversations_fts(conversations_fts) VALUES ('rebuild');
"""

_OUR_TABLES = {"conversations", "messages"}
_MESSAGE_COLUMNS = "id, conversation_id, role, content, reasoning, images, status, stats, created_at"


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


def default_db_path() -> Path:
    """Where conversations live: `$DIFFUSION_CHAT_DATA_DIR` if set, else the platform's user data folder."""
    folder = os.environ.get(DATA_DIR_ENV) or platformdirs.user_data_dir("diffusion-chat")
    return Path(folder) / DB_FILENAME


def _fts5_available(connection: sqlite3.Connection) -> bool:
    try:
        connection.execute("CREATE VIRTUAL TABLE temp.fts5_probe USING fts5(text)")
    except sqlite3.OperationalError:
        return False
    connection.execute("DROP TABLE temp.fts5_probe")
    return True


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
        except StoreError:
            self._connection.close()
            raise
        except sqlite3.Error as error:
            self._connection.close()
            raise StoreError(
                f"cannot read the conversation database {self.path} ({error}); it was left untouched:"
                " move it aside to start a new one"
            ) from None

    def _open(self, in_memory: bool) -> None:
        connection = self._connection
        # Transactions are explicit (see _transaction), so DDL and DML commit or roll back together.
        connection.isolation_level = None
        # Read before writing anything: a corrupt or foreign file must fail here, untouched.
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer diffusion-chat (schema {version}, this one reads {SCHEMA_VERSION})"
            )
        if version == 0 and tables:
            raise StoreError(f"{self.path} is not a diffusion-chat conversation database")
        if version == SCHEMA_VERSION and not _OUR_TABLES <= tables:
            raise StoreError(f"{self.path} is damaged: its conversation tables are missing")
        connection.execute("PRAGMA foreign_keys = ON")
        if not in_memory:
            connection.execute("PRAGMA journal_mode = WAL")
        self.full_text_search = _fts5_available(connection)
        has_index = "messages_fts" in tables
        if has_index and not self.full_text_search:
            # Its triggers would make every write fail.
            raise StoreError(f"{self.path} needs SQLite's FTS5 full-text search, which this Python's SQLite lacks")
        script = ""
        if version == 0:
            script += _TABLES + f"PRAGMA user_version = {SCHEMA_VERSION};\n"
        if self.full_text_search and not has_index:
            # Also reached by a database made where FTS5 was missing: the rebuild indexes its old messages.
            script += _FULL_TEXT_INDEX
        if script:
            self._run_script(script)

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

    def _run_script(self, script: str) -> None:
        # executescript() would commit any open transaction first, so the script carries its own.
        try:
            self._connection.executescript("BEGIN IMMEDIATE;\n" + script + "COMMIT;")
        except BaseException:
            if self._connection.in_transaction:
                self._connection.execute("ROLLBACK")
            raise

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
                (_one_line(title), model, _to_json(settings), int(bool(think)), now, now),
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
            ConversationSummary(conversation_id, title, model, count, _time(created), _time(updated))
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
            created_at=_time(created),
            updated_at=_time(updated),
            messages=tuple(_message(row) for row in messages),
        )

    def rename(self, conversation_id: int, title: str) -> None:
        with self._transaction() as connection:
            self._require_conversation(connection, conversation_id)
            connection.execute("UPDATE conversations SET title = ? WHERE id = ?", (_one_line(title), conversation_id))
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
                    "UPDATE conversations SET settings = ? WHERE id = ?", (_to_json(settings), conversation_id)
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
        _check_choice("role", role, ROLES)
        _check_choice("status", status, STATUSES)
        images = [str(image) for image in images]
        with self._transaction() as connection:
            self._require_conversation(connection, conversation_id)
            cursor = connection.execute(
                "INSERT INTO messages (conversation_id, role, content, reasoning, images, status, stats, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id, role, content, reasoning, _to_json(images), status,
                    None if stats is None else _to_json(stats), self._clock(),
                ),
            )
            self._touch(connection, conversation_id)
        return self.get_message(cursor.lastrowid)

    def get_message(self, message_id: int) -> Message:
        rows = self._query(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = ?", (message_id,))
        if not rows:
            raise NotFoundError(f"no message with id {message_id}")
        return _message(rows[0])

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
            _check_choice("status", status, STATUSES)
            changes["status"] = status
        if stats is not None:
            changes["stats"] = _to_json(stats)
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
        """Conversations whose title, and messages whose text, contain every word of `text`; newest first.

        Any input is safe: words are passed to SQLite as quoted strings or bound LIKE patterns, never as
        query syntax, and words without letters or digits are ignored.
        """
        words = [word for word in text.split() if any(character.isalnum() for character in word)]
        if not words:
            return []
        if self.full_text_search:
            # Each word becomes a quoted FTS5 string (inner quotes doubled) with a prefix star, so
            # `"` `*` `:` `(` or NEAR in the input are plain text; words are ANDed.
            match = " ".join('"' + word.replace('"', '""') + '"*' for word in words)
            title_rows = self._query(
                "SELECT c.id, c.title, c.updated_at FROM conversations_fts"
                " JOIN conversations c ON c.id = conversations_fts.rowid"
                " WHERE conversations_fts MATCH ? ORDER BY c.updated_at DESC, c.id DESC LIMIT ?",
                (match, limit),
            )
            message_rows = self._query(
                "SELECT c.id, c.title, m.id, m.role, m.content, m.created_at FROM messages_fts"
                " JOIN messages m ON m.id = messages_fts.rowid JOIN conversations c ON c.id = m.conversation_id"
                " WHERE messages_fts MATCH ? ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
                (match, limit),
            )
        else:
            patterns = ["%" + _escape_like(word) + "%" for word in words]
            title_rows = self._query(
                "SELECT id, title, updated_at FROM conversations WHERE "
                + " AND ".join(["title LIKE ? ESCAPE '\\'"] * len(words))
                + " ORDER BY updated_at DESC, id DESC LIMIT ?",
                (*patterns, limit),
            )
            message_rows = self._query(
                "SELECT c.id, c.title, m.id, m.role, m.content, m.created_at FROM messages m"
                " JOIN conversations c ON c.id = m.conversation_id WHERE "
                + " AND ".join(["m.content LIKE ? ESCAPE '\\'"] * len(words))
                + " ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
                (*patterns, limit),
            )
        hits = [
            SearchHit(conversation_id, title, None, None, _snippet(title, words), _time(updated))
            for conversation_id, title, updated in title_rows
        ]
        hits += [
            SearchHit(conversation_id, title, message_id, role, _snippet(content, words), _time(created))
            for conversation_id, title, message_id, role, content, created in message_rows
        ]
        return hits[:limit]

    def export_markdown(self, conversation_id: int) -> str:
        """The conversation as Markdown: title, model and settings, then each message under its role."""
        conversation = self.get(conversation_id)
        lines = [f"# {conversation.title}", ""]
        lines.append(f"- Model: `{conversation.model}`")
        lines.append(f"- Started: {conversation.created_at.astimezone():%Y-%m-%d %H:%M}")
        lines.append(f"- Thinking: {'on' if conversation.think else 'off'}")
        if conversation.settings:
            overrides = ", ".join(f"{key}={value}" for key, value in sorted(conversation.settings.items()))
            lines.append(f"- Settings: {overrides}")
        for message in conversation.messages:
            lines += ["", f"## {message.role.capitalize()}", ""]
            if message.reasoning:
                lines += ["<details>", "<summary>Reasoning</summary>", "", message.reasoning.strip(), "", "</details>", ""]
            lines.append(message.content.strip())
            if message.images:
                lines += ["", "Images: " + ", ".join(f"`{image}`" for image in message.images)]
            if message.status != "complete":
                lines += ["", f"*({'cancelled' if message.status == 'cancelled' else 'stopped by an error'})*"]
        return "\n".join(lines) + "\n"


# -- helpers ----------------------------------------------------------------------------------------


def _message(row: tuple) -> Message:
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
        created_at=_time(created),
    )


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def _to_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"cannot save {value!r}: {error}") from None


def _one_line(title: str) -> str:
    return " ".join(title.split()) or "Untitled"


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _snippet(text: str, words: Sequence[str], before: int = 30, width: int = 100) -> str:
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
