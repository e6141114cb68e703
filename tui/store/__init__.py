"""Saved conversations: a SQLite database in the user's data folder.

The package keeps the parts apart: `store` (the `ConversationStore` class: open, transactions, reads and
writes), `schema` and `migrations/` (the version ladder), `search` (FTS5 or LIKE) and `export` (Markdown).
Everything a caller needs is importable from here.
"""

from .export import export_file_name
from .records import (
    ROLES,
    STATUSES,
    Conversation,
    ConversationSummary,
    Message,
    NotFoundError,
    SearchHit,
    StoreError,
)
from .schema import SCHEMA_VERSION
from .store import DATA_DIR_ENV, DB_FILENAME, ConversationStore, default_db_path

__all__ = [
    "DATA_DIR_ENV",
    "DB_FILENAME",
    "ROLES",
    "SCHEMA_VERSION",
    "STATUSES",
    "Conversation",
    "ConversationStore",
    "ConversationSummary",
    "Message",
    "NotFoundError",
    "SearchHit",
    "StoreError",
    "default_db_path",
    "export_file_name",
]
