"""The schema ladder: files from every older version open and upgrade, each step in its own transaction,
and files that claim a version their tables do not have are refused untouched."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from store_helpers import V1_FIXTURE, assert_refused_untouched
from tui.store import SCHEMA_VERSION, ConversationStore, schema
from tui.store.migrations import Migration, run


def _shape(path: Path) -> dict[str, tuple[str, ...]]:
    connection = sqlite3.connect(path)
    try:
        names = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: tuple(row[1] for row in connection.execute(f'PRAGMA table_info("{name}")')) for name in names}
    finally:
        connection.close()


def _version(path: Path) -> int:
    connection = sqlite3.connect(path)
    try:
        return connection.execute("PRAGMA user_version").fetchone()[0]
    finally:
        connection.close()


def _build(path: Path, version: int, *, full_text: bool = True) -> None:
    """A file at `version`, made by the ladder's own first `version` steps (and the index, if asked)."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        for step in schema.MIGRATIONS[:version]:
            connection.execute("BEGIN")
            step.upgrade(connection)
            connection.execute(f"PRAGMA user_version = {step.version}")
            connection.execute("COMMIT")
        if full_text:
            schema.ensure_full_text_index(connection, path)
    finally:
        connection.close()


def test_the_ladder_is_numbered_one_step_per_version():
    assert [step.version for step in schema.MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))
    assert schema.tables_at(0) == {}
    for version in range(1, SCHEMA_VERSION + 1):
        assert set(schema.tables_at(version - 1)) <= set(schema.tables_at(version))


def test_a_new_file_gets_every_step_and_the_index(tmp_path: Path):
    path = tmp_path / "new.sqlite3"
    with ConversationStore(path) as store:
        assert store.full_text_search
    assert _version(path) == SCHEMA_VERSION
    shape = _shape(path)
    for table, columns in schema.tables_at(SCHEMA_VERSION).items():
        assert shape[table] == columns
    assert {"messages_fts", "conversations_fts"} <= set(shape)


def test_the_released_version_1_file_is_version_1_of_the_ladder(tmp_path: Path):
    # tests/fixtures/store/v1.sqlite3 was written by the store as released (see the README there).
    shape = _shape(V1_FIXTURE)
    for table, columns in schema.tables_at(1).items():
        assert shape[table] == columns
    connection = sqlite3.connect(V1_FIXTURE)
    released = dict(connection.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall())
    connection.close()
    built = tmp_path / "built.sqlite3"
    _build(built, 1)
    connection = sqlite3.connect(built)
    ours = dict(connection.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall())
    connection.close()
    normalise = lambda sql: " ".join(sql.split())  # noqa: E731
    assert {name: normalise(sql) for name, sql in ours.items()} == {
        name: normalise(sql) for name, sql in released.items()
    }


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION + 1))
@pytest.mark.parametrize("missing", ["messages", "conversations"])
def test_a_file_whose_tables_are_missing_is_refused_at_every_version(tmp_path: Path, version: int, missing: str):
    path = tmp_path / "conversations.sqlite3"
    _build(path, version, full_text=False)
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA foreign_keys = OFF")
    connection.execute(f"DROP TABLE {missing}")
    connection.commit()
    connection.close()
    assert_refused_untouched(path, f"damaged: it says schema {version} but has no {missing} table")


def test_a_file_whose_table_lacks_a_column_is_refused(tmp_path: Path):
    path = tmp_path / "conversations.sqlite3"
    connection = sqlite3.connect(path)
    connection.executescript(
        "CREATE TABLE conversations (id INTEGER PRIMARY KEY, title TEXT);"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, content TEXT);"
        "PRAGMA user_version = 1;"
    )
    connection.close()
    assert_refused_untouched(path, "damaged: its conversations table is not the one schema 1 has")


def test_a_file_with_our_version_but_nothing_in_it_is_refused(tmp_path: Path):
    path = tmp_path / "conversations.sqlite3"
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA user_version = 1")
    connection.close()
    assert_refused_untouched(path, "damaged")


def test_run_keeps_trigger_bodies_strings_and_comments_whole():
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute("BEGIN")
    run(
        connection,
        """
        CREATE TABLE t (text TEXT); -- a comment; with a semicolon
        CREATE TABLE log (text TEXT);
        CREATE TRIGGER t_log AFTER INSERT ON t BEGIN
            INSERT INTO log VALUES ('a;b');
            INSERT INTO log VALUES (new.text);
        END;
        INSERT INTO t VALUES ('x;y')
        """,
    )
    assert connection.in_transaction  # nothing committed behind the caller's back
    assert connection.execute("SELECT text FROM log ORDER BY rowid").fetchall() == [("a;b",), ("x;y",)]
    with pytest.raises(ValueError, match="unfinished"):
        run(connection, "CREATE TRIGGER broken AFTER INSERT ON t BEGIN INSERT INTO log VALUES (1);")


def test_a_step_that_commits_on_its_own_is_caught(tmp_path: Path, monkeypatch):
    def commits(connection: sqlite3.Connection) -> None:
        connection.execute("COMMIT")

    monkeypatch.setattr(schema, "MIGRATIONS", (Migration(1, "commits", commits),))
    with pytest.raises(RuntimeError, match="committed on its own"):
        ConversationStore(tmp_path / "conversations.sqlite3")


def test_the_released_version_1_file_opens(tmp_path: Path):
    path = tmp_path / "conversations.sqlite3"
    shutil.copy(V1_FIXTURE, path)
    with ConversationStore(path) as store:
        assert [summary.title for summary in store.list()] == ["Crème brûlée", "Nothing said yet", "Pictures of the beach"]
        assert {hit.conversation_title for hit in store.search("lighthouse")} == {"Pictures of the beach"}
