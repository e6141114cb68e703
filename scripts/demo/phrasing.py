"""Prompt templates: train / held-out wording per sub-task, plus small surface variations.

Templates are `str.format` strings over the sub-task's values ({a}, {word}, {items}, ...). Variations touch
only the template's own words (the first letter's case, the final punctuation mark), never the values, so
the expected answer is unaffected.
"""

from __future__ import annotations

from dataclasses import dataclass

from .heldout import check_split

CASE_FLIP_PROBABILITY = 0.2
DROP_PUNCTUATION_PROBABILITY = 0.2


@dataclass(frozen=True)
class Phrasings:
    train: tuple[str, ...]
    heldout: tuple[str, ...]

    def __post_init__(self):
        overlap = set(self.train) & set(self.heldout)
        if overlap:
            raise ValueError(f"template both in train and held-out: {sorted(overlap)}")

    def of(self, split: str) -> tuple[str, ...]:
        check_split(split)
        return self.train if split == "train" else self.heldout


def choose(rng, phrasings: Phrasings, split: str) -> str:
    return rng.choice(phrasings.of(split))


def vary(rng, template: str) -> str:
    """'What is {a}?' -> 'what is {a}?', 'What is {a}', ... (two independent draws, always consumed)."""
    flip, drop = rng.random() < CASE_FLIP_PROBABILITY, rng.random() < DROP_PUNCTUATION_PROBABILITY
    if flip and template[0].isalpha():
        template = template[0].swapcase() + template[1:]
    if drop and len(template) > 1 and template[-1] in "?.!":
        template = template[:-1]
    return template


def render(rng, template: str, **values) -> str:
    return vary(rng, template).format(**values)


def join_items(rng, items: list[str]) -> str:
    """How a list is written in a prompt: '5, 3, 9', '5 3 9', '5, 3 and 9' or '5,3,9'."""
    style = rng.random()
    if style < 0.5 or len(items) < 2:
        return ", ".join(items)
    if style < 0.7:
        return " ".join(items)
    if style < 0.9:
        return ", ".join(items[:-1]) + " and " + items[-1]
    return ",".join(items)


def number(rng, low: int, high: int) -> int:
    """Uniform over digit counts first, then within the count: a uniform 0..999 draw would be 90 % three-digit
    numbers, and a tiny model must see one- and two-digit operands too."""
    if low > high:
        raise ValueError(f"empty range {low}..{high}")
    buckets = []
    for digits in range(len(str(low)), len(str(high)) + 1):
        lo = max(low, 0 if digits == 1 else 10 ** (digits - 1))
        hi = min(high, 10 ** digits - 1)
        if lo <= hi:
            buckets.append((lo, hi))
    lo, hi = rng.choice(buckets)
    return rng.randint(lo, hi)


@dataclass(frozen=True)
class Drawn:
    """What a task module hands the curriculum for one user turn."""
    subtask: str
    template: str      # the template as listed (before variation): the tests check the split by it
    prompt: str
    answer: str
    reasoning: str     # the thought-channel text, used only when thinking is requested
