"""Helpers for the store tests (tests/test_store*.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tui.store import ConversationStore, StoreError

V1_FIXTURE = Path(__file__).parent / "fixtures" / "store" / "v1.sqlite3"


class FakeClock:
    """Whole seconds that advance by one per call, so ordering by time is deterministic."""

    def __init__(self, start: float = 1_700_000_000.0):
        self._ticks = itertools.count(start)

    def __call__(self) -> float:
        return next(self._ticks)


def assert_refused_untouched(path: Path, match: str) -> None:
    before = path.read_bytes()
    siblings = sorted(path.parent.iterdir())
    with pytest.raises(StoreError, match=match) as raised:
        ConversationStore(path)
    assert str(path) in str(raised.value)
    assert "\n" not in str(raised.value)
    assert path.read_bytes() == before
    assert sorted(path.parent.iterdir()) == siblings  # no -wal/-shm or journal files either
