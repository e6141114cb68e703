"""Sorting: 2-8 numbers (answer `3, 5, 9`) or 2-8 distinct words (answer a Markdown list, one `- word` a line)."""

from __future__ import annotations

from .heldout import draw_tuple, words_for
from .phrasing import Drawn, Phrasings, choose, join_items, number, render

SUBTASKS = ("numbers_ascending", "numbers_descending", "words_alphabetical", "words_reverse")
NUMBER_RANGE = (0, 999)
LENGTH_RANGE = (2, 8)
# Prose this module writes besides the templates (see heldout.fixed_words).
FIXED_TEXT = ("The user wants numbers sorted from largest to smallest", "smallest to largest",
              "words in reverse alphabetical order", "alphabetical order")

PHRASINGS = {
    "numbers_ascending": Phrasings(
        train=("Sort {items}", "Sort these numbers: {items}", "Sort {items} in ascending order.",
               "Put {items} in order from smallest to largest.", "Can you sort {items}?", "order these: {items}",
               "Arrange {items} from lowest to highest", "sort: {items}", "Please sort the numbers {items}.",
               "Sort {items} ascending", "Put these numbers in increasing order: {items}",
               "List {items} from smallest to biggest."),
        heldout=("Could you put {items} into ascending order?", "Rank {items} from least to greatest.",
                 "I need {items} sorted from low to high."),
    ),
    "numbers_descending": Phrasings(
        train=("Sort {items} in descending order.", "Sort {items} from largest to smallest",
               "Put {items} in decreasing order", "Order these from biggest to smallest: {items}",
               "sort descending: {items}", "Arrange {items} from highest to lowest.",
               "Can you sort {items} from largest to smallest?", "Please list {items} in descending order.",
               "Reverse sort these numbers: {items}", "{items} from largest to smallest, please",
               "Sort these numbers, biggest first: {items}", "Put {items} in order from largest to smallest."),
        heldout=("Rank {items} from greatest to least.", "Could you put {items} into descending order?",
                 "I need {items} sorted from high to low."),
    ),
    "words_alphabetical": Phrasings(
        train=("Put these words in alphabetical order: {items}", "Sort these words: {items}", "Alphabetize {items}",
               "Sort {items} alphabetically.", "Arrange {items} in alphabetical order", "Can you alphabetize these: {items}?",
               "sort alphabetically: {items}", "Please sort the words {items} from A to Z.", "Order {items} from a to z",
               "List {items} in dictionary order.", "Put {items} in ABC order", "Sort the words {items}"),
        heldout=("Could you arrange {items} alphabetically?", "I need these words in A-Z order: {items}",
                 "Rearrange {items} so they are alphabetical."),
    ),
    "words_reverse": Phrasings(
        train=("Put these words in reverse alphabetical order: {items}", "Sort {items} from Z to A",
               "Sort these words in reverse alphabetical order: {items}", "Arrange {items} from z to a.",
               "Reverse alphabetize {items}", "sort z to a: {items}", "Please order {items} in reverse alphabetical order.",
               "Can you sort {items} backwards alphabetically?", "List {items} in reverse dictionary order",
               "Order these words from Z to A: {items}", "{items}: sort them in reverse alphabetical order",
               "Sort the words {items} in reverse alphabetical order."),
        heldout=("Could you arrange {items} in Z-A order?", "I need these words sorted descending alphabetically: {items}",
                 "Rearrange {items} so they run from z to a."),
    ),
}


def _numbers(rng):
    values = [number(rng, *NUMBER_RANGE) for _ in range(rng.randint(*LENGTH_RANGE))]
    return tuple(sorted(values)), values   # the rule hashes the multiset, so no reordering leaks it


def number_answer(values, descending: bool) -> str:
    return ", ".join(str(v) for v in sorted(values, reverse=descending))


def word_answer(words, descending: bool) -> str:
    return "\n".join(f"- {w}" for w in sorted(words, reverse=descending))


def draw(rng, split: str, family: str, subtask: str | None = None) -> Drawn:
    subtask = subtask or rng.choice(SUBTASKS)
    descending = subtask in ("numbers_descending", "words_reverse")
    if subtask.startswith("numbers"):
        # Number lists draw from all numbers; the held-out rule is on the whole list.
        items = draw_tuple(rng, split, "sort", _numbers)
        answer = number_answer(items, descending)
        what = f"{len(items)} numbers sorted from " + ("largest to smallest" if descending else "smallest to largest")
        shown = [str(v) for v in items]
    else:
        # Word lists use only the split's own words, so held-out words are never seen in training.
        items = rng.sample(words_for(split), rng.randint(*LENGTH_RANGE))
        answer = word_answer(items, descending)
        what = f"{len(items)} words in " + ("reverse alphabetical" if descending else "alphabetical") + " order"
        shown = items
    template = choose(rng, PHRASINGS[subtask], split)
    prompt = render(rng, template, items=join_items(rng, shown))
    return Drawn(subtask, template, prompt, answer, f"The user wants {what}.")
