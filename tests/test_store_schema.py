"""The schema ladder: files from every older version open and upgrade, each step in its own transaction,
and files that claim a version their tables do not have are refused untouched."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from store_helpers import V1_FIXTURE, assert_refused_untouched
from tui.store import SCHEMA_VERSION, ConversationStore, StoreError, schema
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


# -- upgrading: every older version reaches the current one ----------------------------------------


def _fill_v1(connection: sqlite3.Connection) -> None:
    """Rows as schema 1 held them. The two conversations' messages interleave by id, as they do when
    someone switches between conversations."""
    connection.execute("BEGIN")
    connection.executemany(
        "INSERT INTO conversations (id, title, model, settings, think, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(1, "Pictures", "dg", '{"temp": 0.5}', 1, 100.0, 150.0), (2, "Empty", "dg", "{}", 0, 110.0, 110.0),
         (3, "Crème brûlée", "llada", "{}", 0, 120.0, 160.0)],
    )
    connection.executemany(
        "INSERT INTO messages (id, conversation_id, role, content, reasoning, images, status, stats, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (1, 1, "system", "You describe pictures.", "", "[]", "complete", None, 101.0),
            (2, 1, "user", "What is this?", "", '["beach.png"]', "complete", None, 102.0),
            (3, 3, "user", "How do I caramelise sugar?", "", "[]", "complete", None, 121.0),
            (4, 1, "assistant", "A lighthouse.", "Tall and striped.", "[]", "complete", '{"steps": 12}', 103.0),
            (5, 3, "assistant", "Use a torch.", "", "[]", "error", None, 122.0),
            (6, 1, "user", "Longer please", "", "[]", "complete", None, 104.0),
            (7, 1, "assistant", "A long", "", "[]", "cancelled", None, 105.0),
        ],
    )
    connection.execute("COMMIT")


def _check_v1_data(store: ConversationStore) -> None:
    pictures = store.get(1)
    assert (pictures.title, pictures.model, pictures.think, pictures.system_prompt) == ("Pictures", "dg", True, None)
    assert pictures.updated_at.timestamp() == 150.0  # upgrading is not a change the person made
    assert [m.id for m in pictures.messages] == [1, 2, 4, 6, 7]
    # Each message's parent is the previous message of its own conversation.
    assert [m.parent_id for m in pictures.messages] == [None, 1, 2, 4, 6]
    assert [m.role for m in pictures.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert [m.revision for m in pictures.messages] == [None, None, 1, None, 1]
    assert pictures.messages[1].images == ("beach.png",)
    assert (pictures.messages[2].reasoning, pictures.messages[2].stats) == ("Tall and striped.", {"steps": 12})
    assert [m.status for m in pictures.messages][-1] == "cancelled"
    for message in pictures.messages:
        assert store.siblings(message.id) == [message]
    (revision,) = store.revisions(4)
    assert (revision.number, revision.content, revision.reasoning, revision.status) == (
        1, "A lighthouse.", "Tall and striped.", "complete"
    )
    assert (revision.stats, revision.settings) == ({"steps": 12}, None)
    assert revision.created_at == pictures.messages[2].created_at
    assert [r.status for r in store.revisions(5)] == ["error"]

    cooking = store.get(3)
    assert [(m.id, m.parent_id) for m in cooking.messages] == [(3, None), (5, 3)]
    assert store.get(2).messages == ()
    assert [(s.title, s.message_count) for s in store.list()] == [("Crème brûlée", 2), ("Pictures", 5), ("Empty", 0)]

    assert [hit.message_id for hit in store.search("lighthouse")] == [4]
    assert [hit.conversation_id for hit in store.search("caramelise")] == [3]
    assert [hit.conversation_id for hit in store.search("Pictures") if hit.message_id is None] == [1]
    if store.full_text_search:
        assert {hit.conversation_id for hit in store.search("brulee")} == {3}  # accents folded
    connection = store._connection
    assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
    # The unused settings column is kept as it was, so nothing a version-1 file held is lost.
    assert connection.execute("SELECT settings FROM conversations WHERE id = 1").fetchone() == ('{"temp": 0.5}',)

    # And the upgraded conversation goes on: new messages follow its last one, revisions follow revision 1.
    follow_up = store.add_message(1, "user", "And the sea?")
    assert follow_up.parent_id == 7
    assert store.add_revision(7, "A long story about a lighthouse.").number == 2
    assert {hit.message_id for hit in store.search("story")} == {7}
    if store.full_text_search:
        connection.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
        connection.execute("INSERT INTO conversations_fts(conversations_fts) VALUES ('integrity-check')")


# version -> (fill a file at that version, check it once upgraded). Every older version needs one.
OLDER_VERSIONS = {1: (_fill_v1, _check_v1_data)}


def test_every_older_version_has_an_upgrade_test():
    assert set(OLDER_VERSIONS) == set(range(1, SCHEMA_VERSION))


@pytest.mark.parametrize("full_text", [True, False], ids=["indexed", "made-without-fts5"])
@pytest.mark.parametrize("version", sorted(OLDER_VERSIONS))
def test_every_older_version_upgrades_to_the_current_one(tmp_path: Path, version: int, full_text: bool):
    path = tmp_path / "conversations.sqlite3"
    _build(path, version, full_text=full_text)
    fill, check_data = OLDER_VERSIONS[version]
    connection = sqlite3.connect(path, isolation_level=None)
    fill(connection)
    connection.close()
    with ConversationStore(path) as store:
        assert store.full_text_search  # a file made without FTS5 gets its index here
        check_data(store)
    assert _version(path) == SCHEMA_VERSION
    with ConversationStore(path) as reopened:  # and opening it again changes nothing more
        assert [m.id for m in reopened.get(1).messages] == [1, 2, 4, 6, 7, 8]


def test_the_released_version_1_file_upgrades(tmp_path: Path):
    path = tmp_path / "conversations.sqlite3"
    shutil.copy(V1_FIXTURE, path)
    with ConversationStore(path) as store:
        titles = [summary.title for summary in store.list()]
        assert titles == ["Crème brûlée", "Nothing said yet", "Pictures of the beach"]
        beach = store.list()[2]
        conversation = store.get(beach.id)
        assert conversation.think is True and conversation.system_prompt is None
        assert [m.role for m in conversation.messages] == ["system", "user", "assistant", "user", "assistant"]
        assert [m.parent_id for m in conversation.messages][1:] == [m.id for m in conversation.messages][:-1]
        answer = conversation.messages[2]
        assert store.revisions(answer.id)[0].stats == {"tokens_per_second": 41.5, "steps": 12}
        assert [hit.message_id for hit in store.search("lighthouse")] == [answer.id]
        assert {hit.conversation_title for hit in store.search("brulee")} == {"Crème brûlée"}
        assert "*(stopped by an error)*" in store.export_markdown(store.list()[0].id)
    assert _version(path) == SCHEMA_VERSION
    assert _version(V1_FIXTURE) == 1  # the fixture itself was only copied


# -- each step is its own transaction ---------------------------------------------------------------


def _broken(error: BaseException) -> Migration:
    def upgrade(connection: sqlite3.Connection) -> None:
        run(connection, "ALTER TABLE conversations ADD COLUMN half_done TEXT; CREATE TABLE half_done (x);")
        connection.execute("UPDATE conversations SET title = 'overwritten'")
        raise error

    return Migration(SCHEMA_VERSION, "breaks halfway", upgrade)


@pytest.mark.parametrize("error", [sqlite3.OperationalError("disk on fire"), RuntimeError("bug in a step")])
def test_a_failing_step_leaves_the_file_at_the_version_before_it(tmp_path: Path, monkeypatch, error):
    path = tmp_path / "conversations.sqlite3"
    _build(path, SCHEMA_VERSION - 1)
    connection = sqlite3.connect(path, isolation_level=None)
    OLDER_VERSIONS[SCHEMA_VERSION - 1][0](connection)
    before = list(connection.iterdump())
    connection.close()

    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS[:-1], _broken(error)))
    expected = StoreError if isinstance(error, sqlite3.Error) else type(error)
    with pytest.raises(expected) as raised:
        ConversationStore(path)
    if expected is StoreError:
        message = str(raised.value)
        assert str(path) in message and "disk on fire" in message
        assert f"left at schema {SCHEMA_VERSION - 1}" in message
    assert _version(path) == SCHEMA_VERSION - 1
    connection = sqlite3.connect(path)
    assert list(connection.iterdump()) == before  # nothing of the half-done step remains
    connection.close()


def test_steps_commit_one_by_one(tmp_path: Path, monkeypatch):
    # A new file whose last step fails keeps the steps before it, and the real ladder finishes it later.
    path = tmp_path / "conversations.sqlite3"
    with monkeypatch.context() as patched:
        patched.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS[:-1], _broken(sqlite3.OperationalError("no"))))
        with pytest.raises(StoreError):
            ConversationStore(path)
    assert _version(path) == SCHEMA_VERSION - 1
    shape = _shape(path)
    assert {table: shape[table] for table in schema.tables_at(SCHEMA_VERSION - 1)} == schema.tables_at(
        SCHEMA_VERSION - 1
    )
    with ConversationStore(path) as store:
        assert store.list() == []
    assert _version(path) == SCHEMA_VERSION


def test_a_version_newer_than_this_code_is_refused(tmp_path: Path):
    path = tmp_path / "conversations.sqlite3"
    _build(path, SCHEMA_VERSION)
    connection = sqlite3.connect(path)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    connection.commit()
    connection.close()
    assert_refused_untouched(path, f"newer diffusion-chat \\(schema {SCHEMA_VERSION + 1}, this one reads up to")


def test_an_indexed_file_is_refused_where_fts5_is_missing(tmp_path: Path, monkeypatch):
    path = tmp_path / "conversations.sqlite3"
    _build(path, 1)
    monkeypatch.setattr(schema, "fts5_available", lambda connection: False)
    assert_refused_untouched(path, "needs SQLite's FTS5")  # refused before upgrading: its triggers need FTS5
