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

import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import platformdirs

from . import schema, trajectories, tree
from .export import to_markdown
from ..records import ROLES, STATUSES, Conversation, ConversationSummary, Message, NotFoundError, Revision, SearchHit
from ..records import StoreError
from .rows import check_choice, message_from_row, clean_title, revision_from_row, to_json, to_time
from .search import search

DATA_DIR_ENV = "DIFFUSION_CHAT_DATA_DIR"
DB_FILENAME = "conversations.sqlite3"

DEFAULT_TRAJECTORY_CAP = 16 * 1024 * 1024  # bytes of recorded trajectories kept per conversation


class _CurrentLeaf:
    def __repr__(self) -> str:
        return "CURRENT_LEAF"


# `add_message`'s default parent: the end of the conversation's current path.
CURRENT_LEAF: Any = _CurrentLeaf()


def default_db_path() -> Path:
    """Where conversations live: `$DIFFUSION_CHAT_DATA_DIR` if set, else the platform's user data folder."""
    folder = os.environ.get(DATA_DIR_ENV) or platformdirs.user_data_dir("diffusion-chat")
    return Path(folder) / DB_FILENAME


class ConversationStore:
    """Conversations and their messages, kept in one SQLite file. Use from the UI thread only.

    `path` may be ":memory:" for a throwaway store; `clock` gives the time in seconds since the epoch;
    `trajectory_cap` is how many bytes of recorded trajectories one conversation keeps (oldest go first).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        trajectory_cap: int = DEFAULT_TRAJECTORY_CAP,
    ):
        if trajectory_cap < 0:
            raise ValueError(f"trajectory_cap must be at least 0 bytes, got {trajectory_cap}")
        self.path = Path(path)
        self._clock = clock
        self.trajectory_cap = trajectory_cap
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
        """One write: everything inside commits together or not at all."""
        with self._reading():
            with schema.transaction(self._connection):
                yield self._connection

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """Statements that only read, with SQLite's errors turned into StoreError."""
        try:
            yield self._connection
        except sqlite3.Error as error:
            raise self._error(error) from None

    def _query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple]:
        with self._reading() as connection:
            return connection.execute(sql, parameters).fetchall()

    def _touch(self, connection: sqlite3.Connection, conversation_id: int) -> None:
        connection.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (self._clock(), conversation_id))

    def _require_conversation(self, connection: sqlite3.Connection, conversation_id: int) -> None:
        if connection.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone() is None:
            raise NotFoundError(f"no conversation with id {conversation_id}")

    def _message_row(self, connection: sqlite3.Connection, message_id: int) -> tuple[int, int | None, str]:
        """(conversation id, parent id, role) of a message."""
        row = connection.execute(
            "SELECT conversation_id, parent_id, role FROM messages WHERE id = ?", (message_id,)
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no message with id {message_id}")
        return row

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> ConversationStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- conversations ------------------------------------------------------------------------------

    def create(self, title: str, model: str, *, think: bool = False, system_prompt: str | None = None) -> Conversation:
        now = self._clock()
        with self._transaction() as connection:
            cursor = connection.execute(
                "INSERT INTO conversations (title, model, think, system_prompt, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (clean_title(title), model, _flag(think), _prompt(system_prompt), now, now),
            )
        return self.get(cursor.lastrowid)

    def list(self) -> list[ConversationSummary]:
        """All conversations, most recently changed first."""
        rows = self._query(tree.SUMMARIES)
        return [
            ConversationSummary(conversation_id, title, model, count, to_time(created), to_time(updated))
            for conversation_id, title, model, created, updated, count in rows
        ]

    def get(self, conversation_id: int) -> Conversation:
        """A conversation with the messages on its current path, from the first one to the current leaf."""
        rows = self._query(
            "SELECT title, model, think, system_prompt, created_at, updated_at FROM conversations WHERE id = ?",
            (conversation_id,),
        )
        if not rows:
            raise NotFoundError(f"no conversation with id {conversation_id}")
        title, model, think, system_prompt, created, updated = rows[0]
        messages = self._query(tree.PATH, (conversation_id,))
        return Conversation(
            id=conversation_id,
            title=title,
            model=model,
            think=bool(think),
            system_prompt=system_prompt,
            created_at=to_time(created),
            updated_at=to_time(updated),
            messages=tuple(message_from_row(row) for row in messages),
        )

    def rename(self, conversation_id: int, title: str) -> None:
        self._update_conversation(conversation_id, "title", clean_title(title))

    def set_think(self, conversation_id: int, think: bool) -> None:
        """Whether the model thinks before answering in this conversation."""
        self._update_conversation(conversation_id, "think", _flag(think))

    def set_model(self, conversation_id: int, model: str) -> None:
        """The model the conversation was last answered by (what the conversation list shows)."""
        self._update_conversation(conversation_id, "model", model)

    def set_system_prompt(self, conversation_id: int, text: str | None) -> None:
        """The conversation's system prompt; None or blank text removes it."""
        self._update_conversation(conversation_id, "system_prompt", _prompt(text))

    def _update_conversation(self, conversation_id: int, column: str, value: Any) -> None:
        # `column` is one of the fixed names above, never the caller's.
        with self._transaction() as connection:
            self._require_conversation(connection, conversation_id)
            connection.execute(f"UPDATE conversations SET {column} = ? WHERE id = ?", (value, conversation_id))
            self._touch(connection, conversation_id)

    def delete(self, conversation_id: int) -> None:
        """Delete a conversation with all its messages, revisions and trajectories."""
        with self._transaction() as connection:
            self._require_conversation(connection, conversation_id)
            connection.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    # -- messages and branches ----------------------------------------------------------------------

    def add_message(
        self,
        conversation_id: int,
        role: str,
        content: str,
        reasoning: str = "",
        images: Sequence[str] = (),
        status: str = "complete",
        stats: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
        parent_id: int | None = CURRENT_LEAF,
    ) -> Message:
        """Add a message after `parent_id` (default: the current leaf; None: a new first message) and make
        it the current leaf. Editing and resending is a new user message with the edited one's parent.

        `images` are attachment file names; `stats` is any JSON-able dict (speed, steps...). An assistant
        message gets revision 1, made with the sampler `settings` (a JSON-able dict).
        """
        check_choice("role", role, ROLES)
        check_choice("status", status, STATUSES)
        if settings is not None and role != "assistant":
            raise ValueError("only assistant messages record the sampler settings they were made with")
        images_json = to_json([str(image) for image in images])
        stats_json, settings_json = _optional_json(stats), _optional_json(settings)
        now = self._clock()
        with self._transaction() as connection:
            self._require_conversation(connection, conversation_id)
            if parent_id is CURRENT_LEAF:
                (parent_id,) = connection.execute(
                    "SELECT current_leaf_id FROM conversations WHERE id = ?", (conversation_id,)
                ).fetchone()
            elif parent_id is not None and self._message_row(connection, parent_id)[0] != conversation_id:
                raise ValueError(f"message {parent_id} belongs to another conversation than {conversation_id}")
            message_id = connection.execute(
                "INSERT INTO messages (conversation_id, parent_id, role, content, reasoning, images, status, stats,"
                " current_revision, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (conversation_id, parent_id, role, content, reasoning, images_json, status, stats_json,
                 1 if role == "assistant" else None, now),
            ).lastrowid
            if role == "assistant":
                tree.insert_revision(connection, message_id, 1, content, reasoning, status, stats_json, settings_json,
                                     now)
            _set_leaf(connection, conversation_id, message_id)
            self._touch(connection, conversation_id)
        return self.get_message(message_id)

    def get_message(self, message_id: int) -> Message:
        rows = self._query(f"SELECT {tree.MESSAGE_COLUMNS} FROM messages m WHERE m.id = ?", (message_id,))
        if not rows:
            raise NotFoundError(f"no message with id {message_id}")
        return message_from_row(rows[0])

    def siblings(self, message_id: int) -> list[Message]:
        """The alternatives at this message's place (itself included): the messages with its parent, oldest first."""
        with self._reading() as connection:
            conversation_id, parent_id, _ = self._message_row(connection, message_id)
        rows = self._query(tree.SIBLINGS, (conversation_id, parent_id))
        return [message_from_row(row) for row in rows]

    def set_current_leaf(self, conversation_id: int, message_id: int) -> None:
        """End the current path at `message_id`: `get` shows root → it, and new messages follow it."""
        with self._transaction() as connection:
            self._require_conversation(connection, conversation_id)
            if self._message_row(connection, message_id)[0] != conversation_id:
                raise NotFoundError(f"no message with id {message_id} in conversation {conversation_id}")
            _set_leaf(connection, conversation_id, message_id)

    def switch_branch(self, message_id: int) -> Conversation:
        """Show the branch through `message_id` (e.g. one of its `siblings`): the current leaf becomes the
        newest message without replies under it. Returns the conversation as it now reads."""
        with self._transaction() as connection:
            conversation_id = self._message_row(connection, message_id)[0]
            leaf_id = tree.newest_leaf(connection, message_id)
            _set_leaf(connection, conversation_id, leaf_id)
        return self.get(conversation_id)

    # -- revisions ----------------------------------------------------------------------------------

    def add_revision(
        self,
        message_id: int,
        content: str,
        reasoning: str = "",
        status: str = "complete",
        stats: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Revision:
        """A new version of an assistant message (a regenerated answer); it becomes the current one."""
        check_choice("status", status, STATUSES)
        stats_json, settings_json = _optional_json(stats), _optional_json(settings)
        with self._transaction() as connection:
            conversation_id, _, role = self._message_row(connection, message_id)
            if role != "assistant":
                raise ValueError(f"message {message_id} is a {role} message; only assistant messages have revisions")
            (number,) = connection.execute(
                "SELECT COALESCE(MAX(number), 0) + 1 FROM revisions WHERE message_id = ?", (message_id,)
            ).fetchone()
            revision_id = tree.insert_revision(
                connection, message_id, number, content, reasoning, status, stats_json, settings_json, self._clock()
            )
            tree.show_revision(connection, message_id, number)
            self._touch(connection, conversation_id)
        return self._revisions("r.id = ?", revision_id)[0]

    def revisions(self, message_id: int) -> list[Revision]:
        """The message's revisions by number (none for user and system messages)."""
        self.get_message(message_id)
        return self._revisions("r.message_id = ?", message_id)

    def set_current_revision(self, message_id: int, number: int) -> Message:
        """Show revision `number` of the message; its row mirrors that revision from now on."""
        with self._transaction() as connection:
            self._message_row(connection, message_id)
            if not tree.show_revision(connection, message_id, number):
                raise NotFoundError(f"message {message_id} has no revision {number}")
        return self.get_message(message_id)

    def _revisions(self, where: str, value: int) -> list[Revision]:
        rows = self._query(f"SELECT {tree.REVISION_COLUMNS} FROM revisions r WHERE {where} ORDER BY r.number", (value,))
        return [revision_from_row(row) for row in rows]

    # -- trajectories -------------------------------------------------------------------------------

    def save_trajectory(self, revision_id: int, data: bytes) -> bool:
        """Keep a revision's recorded denoising (replacing an earlier one), deleting the conversation's oldest
        recordings to stay under `trajectory_cap`; False, with nothing changed, if `data` alone is over it."""
        with self._transaction() as connection:
            return trajectories.save(connection, revision_id, data, self.trajectory_cap, self._clock())

    def load_trajectory(self, revision_id: int) -> bytes | None:
        """The revision's recorded trajectory, or None if none is kept."""
        with self._reading() as connection:
            return trajectories.load(connection, revision_id)

    # -- search and export --------------------------------------------------------------------------

    def search(self, text: str, limit: int = 50) -> list[SearchHit]:
        """Conversations whose title, and messages whose text, contain every word of `text`; newest first."""
        return search(self._query, self.full_text_search, text, limit)

    def export_markdown(self, conversation_id: int) -> str:
        """The current path as Markdown, with the system prompt, revisions and where other branches are."""
        conversation = self.get(conversation_id)
        revisions = {m.id: self.revisions(m.id) for m in conversation.messages if m.role == "assistant"}
        branches = {}
        for message in conversation.messages:
            ids = [sibling.id for sibling in self.siblings(message.id)]
            branches[message.id] = (ids.index(message.id) + 1, len(ids))
        return to_markdown(conversation, revisions, branches)


def _set_leaf(connection: sqlite3.Connection, conversation_id: int, message_id: int) -> None:
    connection.execute("UPDATE conversations SET current_leaf_id = ? WHERE id = ?", (message_id, conversation_id))


def _flag(value: bool) -> int:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return int(value)


def _prompt(text: str | None) -> str | None:
    return text if text is not None and text.strip() else None


def _optional_json(value: Any) -> str | None:
    return None if value is None else to_json(value)
