"""One module per schema version: `vK.MIGRATION` takes a conversation database from version K-1 to K.

`tui.store.schema` runs each step inside a transaction it opened, and bumps `PRAGMA user_version` in that
same transaction. A step therefore must not commit. It runs its SQL with `run`, statement by statement,
and never with `executescript`, which would commit the open transaction first.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    version: int  # the schema version the database has after this step
    summary: str
    upgrade: Callable[[sqlite3.Connection], None]


def run(connection: sqlite3.Connection, script: str) -> None:
    """Execute the statements of `script` one by one inside the open transaction."""
    statement = ""
    # Cut at semicolons, but only where SQLite agrees a statement ends: a trigger body, a string or a
    # comment may hold semicolons of its own.
    for piece in script.split(";"):
        statement += piece + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip(" \t\n;"):
                connection.execute(statement)
            statement = ""
    if statement.strip(" \t\n;"):
        raise ValueError(f"unfinished SQL statement at the end of a migration: {statement.strip()!r}")
