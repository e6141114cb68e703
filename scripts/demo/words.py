"""The demo's word list (`words.txt`, committed: CI has no apt packages to rebuild it from)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

WORDS_FILE = Path(__file__).with_name("words.txt")
_WORD = re.compile(r"[a-z]{3,9}")


@functools.lru_cache(maxsize=1)
def load_words() -> tuple[str, ...]:
    """Every word of `words.txt` in file order (sorted), comments and blank lines skipped.

    Raises ValueError on a line that is not a 3-9 letter lowercase word: the tokenizer's character set and
    the tasks' answers (reversal, spelling, letter counts) assume exactly that alphabet."""
    words = []
    for number, line in enumerate(WORDS_FILE.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not _WORD.fullmatch(line):
            raise ValueError(f"{WORDS_FILE.name}:{number}: not a 3-9 letter lowercase word: {line!r}")
        words.append(line)
    if len(set(words)) != len(words):
        raise ValueError(f"{WORDS_FILE.name} lists a word twice")
    return tuple(words)
