"""Saved conversations: a SQLite database in the user's data folder.

The package keeps the parts apart: `store` (the `ConversationStore` class: open, transactions, reads and
writes), `rows` (SQLite rows to the records of `tui.records`, re-exported here), `schema` and `migrations/`
(the version ladder), `tree` (the SQL of branches and revisions), `trajectories` (recorded denoising,
capped), `search` (FTS5 or LIKE) and `export` (Markdown). Everything a caller needs is importable from here.
"""

from .export import export_file_name
from ..records import (
    ROLES,
    STATUSES,
    Conversation,
    ConversationSummary,
    Message,
    NotFoundError,
    Revision,
    SearchHit,
    StoreError,
)
from .schema import SCHEMA_VERSION
from .store import CURRENT_LEAF, DATA_DIR_ENV, DB_FILENAME, DEFAULT_TRAJECTORY_CAP, ConversationStore, default_db_path

__all__ = [
    "CURRENT_LEAF",
    "DATA_DIR_ENV",
    "DB_FILENAME",
    "DEFAULT_TRAJECTORY_CAP",
    "ROLES",
    "SCHEMA_VERSION",
    "STATUSES",
    "Conversation",
    "ConversationStore",
    "ConversationSummary",
    "Message",
    "NotFoundError",
    "Revision",
    "SearchHit",
    "StoreError",
    "default_db_path",
    "export_file_name",
]
