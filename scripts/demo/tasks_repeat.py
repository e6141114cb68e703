"""Repeating: copy 1-8 words verbatim, or write a word (or two) N times separated by single spaces."""

from __future__ import annotations

from .heldout import words_for
from .phrasing import Drawn, Phrasings, choose, render

SUBTASKS = ("verbatim", "times")
TEXT_WORDS = (1, 8)
TIMES = (2, 5)
NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}
SENTENCE_PROBABILITY = 0.3   # "Good morning everyone." instead of "good morning everyone": copy case and dot too

# Prose this module writes besides the templates (see heldout.fixed_words).
FIXED_TEXT = ("The user wants the text repeated exactly.", "written times.", *NUMBER_WORDS.values())

PHRASINGS = {
    "verbatim": Phrasings(
        train=("Repeat after me: {text}", "Say exactly: {text}", "Repeat this: {text}", "Please repeat: {text}",
               "Echo: {text}", 'Say "{text}"', "Repeat exactly what I write: {text}", "Copy this text: {text}",
               'Can you say "{text}"?', "Type this back to me: {text}", "repeat: {text}", "Write exactly this: {text}",
               "Say this back: {text}"),
        heldout=("Please echo the following words: {text}", 'Could you repeat "{text}" exactly?',
                 "Parrot this back to me: {text}"),
    ),
    "times": Phrasings(
        train=("Say {text} {n} times", "Write {text} {n} times.", "Repeat {text} {n} times", 'Say "{text}" {n} times.',
               "Type {text} {n} times", "Can you write {text} {n} times?", "Please say {text} {n} times.",
               "{text}, {n} times", 'Repeat "{text}" {n} times', "Give me {text} {n} times", "Print {text} {n} times."),
        heldout=("Could you write {text} out {n} times?", "I want to see {text} repeated {n} times.",
                 "Echo {text} {n} times over."),
    ),
}


def times_answer(text: str, n: int) -> str:
    return " ".join([text] * n)


def draw(rng, split: str, family: str, subtask: str | None = None) -> Drawn:
    subtask = subtask or rng.choice(SUBTASKS)
    pool = words_for(split)                  # held-out words only in the held-out split
    template = choose(rng, PHRASINGS[subtask], split)
    if subtask == "verbatim":
        text = " ".join(rng.choice(pool) for _ in range(rng.randint(*TEXT_WORDS)))
        if rng.random() < SENTENCE_PROBABILITY:
            text = text[0].upper() + text[1:] + "."
        return Drawn(subtask, template, render(rng, template, text=text), text, "The user wants the text repeated exactly.")
    text = " ".join(rng.choice(pool) for _ in range(rng.randint(1, 2)))
    n = rng.randint(*TIMES)
    shown = NUMBER_WORDS[n] if rng.random() < 0.5 else str(n)
    return Drawn(subtask, template, render(rng, template, text=text, n=shown), times_answer(text, n),
                 f"The user wants {text} written {n} times.")
