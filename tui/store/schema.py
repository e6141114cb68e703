"""The schema ladder: how a conversation database gets from the version it has to the current one.

`PRAGMA user_version` is the schema version; 0 is a file nobody has written to yet. `MIGRATIONS[k]` takes a
database from version k to k+1, and each step is a module in `migrations/`. Opening a file:

1. `check` only reads. It refuses a newer version, a version-0 file that already has tables (another
   program's), a file whose tables are not the ones its version promises, and a file with a full-text
   index where this SQLite lacks FTS5 (the index's triggers would make every write fail).
2. `upgrade` applies the missing steps in order, each in its own transaction that also bumps
   `user_version`. A step that fails rolls back and leaves the file at the version before it.
3. `ensure_full_text_index` adds the FTS5 index where SQLite has FTS5 and the file lacks it. That covers a
   new file, and a file made where FTS5 was missing, whose rows are indexed by a rebuild.

A new file runs the whole ladder, so new and upgraded files cannot drift apart.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .migrations import Migration, run, v1, v2
from ..records import StoreError

MIGRATIONS: tuple[Migration, ...] = (v1.MIGRATION, v2.MIGRATION)
SCHEMA_VERSION = len(MIGRATIONS)

# (table, column) pairs with an external-content FTS5 index named <table>_fts. The text lives once, in the
# table itself, and three triggers keep the index in step with every insert, update and delete (deletes
# cascaded from a conversation included). The names match the ones version-1 files already hold.
FULL_TEXT_INDEXED = (("messages", "content"), ("conversations", "title"))

_FULL_TEXT_TEMPLATE = """
CREATE VIRTUAL TABLE {table}_fts USING fts5(
    {column}, content='{table}', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER {table}_fts_insert AFTER INSERT ON {table} BEGIN
    INSERT INTO {table}_fts(rowid, {column}) VALUES (new.id, new.{column});
END;
CREATE TRIGGER {table}_fts_delete AFTER DELETE ON {table} BEGIN
    INSERT INTO {table}_fts({table}_fts, rowid, {column}) VALUES ('delete', old.id, old.{column});
END;
CREATE TRIGGER {table}_fts_update AFTER UPDATE OF {column} ON {table} BEGIN
    INSERT INTO {table}_fts({table}_fts, rowid, {column}) VALUES ('delete', old.id, old.{column});
    INSERT INTO {table}_fts(rowid, {column}) VALUES (new.id, new.{column});
END;
INSERT INTO {table}_fts({table}_fts) VALUES ('rebuild');
"""


def full_text_index_sql(table: str, column: str) -> str:
    return _FULL_TEXT_TEMPLATE.format(table=table, column=column)


def fts5_available(connection: sqlite3.Connection) -> bool:
    try:
        connection.execute("CREATE VIRTUAL TABLE temp.fts5_probe USING fts5(text)")
    except sqlite3.OperationalError:
        return False
    connection.execute("DROP TABLE temp.fts5_probe")
    return True


def table_names(connection: sqlite3.Connection) -> set[str]:
    return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(connection: sqlite3.Connection, table: str) -> tuple[str, ...]:
    return tuple(row[1] for row in connection.execute(f'PRAGMA table_info("{table}")'))


def tables_at(version: int) -> dict[str, tuple[str, ...]]:
    """The tables (name -> column names) a database at `version` has: the first `version` steps' work."""
    return _tables_after(MIGRATIONS[:version])


@functools.cache
def _tables_after(steps: tuple[Migration, ...]) -> dict[str, tuple[str, ...]]:
    # Found by running the steps on an empty in-memory database, so no second list has to be kept up to date.
    connection = sqlite3.connect(":memory:", isolation_level=None)
    try:
        connection.execute("BEGIN")
        for step in steps:
            step.upgrade(connection)
        return {name: _columns(connection, name) for name in sorted(table_names(connection))}
    finally:
        connection.close()


def check(connection: sqlite3.Connection, path: Path) -> tuple[int, bool]:
    """(schema version, whether full-text search is available), once the file is known to be ours, whole
    and usable here; raises StoreError otherwise. Reads only."""
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    tables = table_names(connection)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer diffusion-chat (schema {version}, this one reads up to {SCHEMA_VERSION})"
        )
    if version == 0 and tables:
        raise StoreError(f"{path} is not a diffusion-chat conversation database")
    for table, columns in tables_at(version).items():
        if table not in tables:
            raise StoreError(f"{path} is damaged: it says schema {version} but has no {table} table")
        if _columns(connection, table) != columns:
            raise StoreError(f"{path} is damaged: its {table} table is not the one schema {version} has")
    full_text_search = fts5_available(connection)
    if not full_text_search and any(f"{table}_fts" in tables for table, _ in FULL_TEXT_INDEXED):
        # Its triggers would make every write fail.
        raise StoreError(f"{path} needs SQLite's FTS5 full-text search, which this Python's SQLite lacks")
    return version, full_text_search


def upgrade(connection: sqlite3.Connection, path: Path, version: int) -> None:
    """Apply the steps after `version`, one transaction each."""
    for step in MIGRATIONS[version:]:
        try:
            with transaction(connection):
                step.upgrade(connection)
                if not connection.in_transaction:
                    raise RuntimeError(f"the migration to schema {step.version} committed on its own")
                connection.execute(f"PRAGMA user_version = {int(step.version)}")
        except sqlite3.Error as error:
            raise StoreError(
                f"cannot upgrade the conversation database {path} to schema {step.version} ({error});"
                f" it was left at schema {step.version - 1}"
            ) from None


def ensure_full_text_index(connection: sqlite3.Connection, path: Path) -> None:
    """Build the full-text index of every indexed table that lacks one (call only where FTS5 exists)."""
    present = table_names(connection)
    missing = [(table, column) for table, column in FULL_TEXT_INDEXED if f"{table}_fts" not in present]
    if not missing:
        return
    try:
        with transaction(connection):
            for table, column in missing:
                run(connection, full_text_index_sql(table, column))
    except sqlite3.Error as error:
        raise StoreError(f"cannot build the search index of {path}: {error}") from None


@contextmanager
def transaction(connection: sqlite3.Connection) -> Iterator[None]:
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        # SQLite may already have rolled back after some errors (a full disk, say).
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
