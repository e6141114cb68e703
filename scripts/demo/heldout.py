"""Which words and number tuples belong to the held-out split.

The evaluation must measure generalisation, so held-out items never appear in training samples. Membership
is a pure function of the item (a keyed BLAKE2 hash), not of any draw order: the trainer, the evaluation
and the tests agree on it without sharing state, on any machine and Python version. Python's built-in
`hash()` is salted per process (PYTHONHASHSEED), so it must never be used here.
"""

from __future__ import annotations

import functools
import hashlib
import re

from .words import load_words

SPLITS = ("train", "heldout")
HELDOUT_WORD_PERCENT = 15   # ~15 % of words.txt is held out
HELDOUT_TUPLE_MODULUS = 8   # 1 in 8 operand pairs / counting ranges / number lists is held out
MAX_TRIES = 10_000          # rejection sampling bound; only reached when a caller narrows a range too far


def stable_hash(*parts: object) -> int:
    """A 64-bit hash of `parts` (ints and strings) that is the same in every process."""
    text = "\x1f".join(f"{type(p).__name__}:{p}" for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8, person=b"demo-split").digest(), "big")


def is_heldout_word(word: str) -> bool:
    """A word and its reversal ("stop"/"pots") share a side, since reversing one writes the other; words the
    curriculum writes itself (in templates, reasoning, fixed answers) are always training words."""
    return stable_hash("word", min(word, word[::-1])) % 100 < HELDOUT_WORD_PERCENT and word not in fixed_words()


@functools.lru_cache(maxsize=1)
def fixed_words() -> frozenset[str]:
    """Every lowercase word in the curriculum's own text: phrasing templates (both splits), the tasks'
    FIXED_TEXT (reasoning sentences, answer formats, chat answers) and the system prompts. Train samples
    show these words all the time, so holding one out would hold out nothing."""
    from . import curriculum   # imported here: the task modules import this module

    texts = list(curriculum.SYSTEM_PROMPTS)
    for module in curriculum.MODULES.values():
        texts += [t for p in module.PHRASINGS.values() for t in (*p.train, *p.heldout)]
        texts += list(module.FIXED_TEXT)
    return frozenset(w for text in texts for w in re.findall("[a-z]+", re.sub(r"\{\w+\}", " ", text).lower()))


def is_heldout_tuple(kind: str, values: tuple) -> bool:
    """`kind` names the task ("add", "count", ...) so one tuple can be held out for one task only."""
    return stable_hash(kind, *values) % HELDOUT_TUPLE_MODULUS == 0


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")


@functools.lru_cache(maxsize=2)
def words_for(split: str) -> tuple[str, ...]:
    """The words a sample of `split` may use: held-out words only in "heldout", never in "train"."""
    check_split(split)
    held = split == "heldout"
    return tuple(w for w in load_words() if is_heldout_word(w) == held)


def draw_tuple(rng, split: str, kind: str, make):
    """Call `make(rng)` until its tuple falls on `split`'s side of the held-out rule.

    `make` returns (key, value): `key` is the tuple the rule hashes (e.g. the unordered operand pair, so a
    swapped prompt order cannot leak a held-out pair into training), `value` is what the caller keeps."""
    check_split(split)
    held = split == "heldout"
    for _ in range(MAX_TRIES):
        key, value = make(rng)
        if is_heldout_tuple(kind, key) == held:
            return value
    raise ValueError(f"no {kind!r} tuple found for the {split!r} split: the configured range is too narrow")
