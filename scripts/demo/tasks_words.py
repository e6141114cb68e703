"""Word games on one word: reverse it, spell it, count its letters, count one letter in it."""

from __future__ import annotations

import string

from .heldout import words_for
from .phrasing import Drawn, Phrasings, choose, render

SUBTASKS = ("reverse", "spell", "length", "letter_count")
ABSENT_LETTER_PROBABILITY = 0.2   # sometimes ask for a letter the word lacks: the answer is then 0
# Prose this module writes besides the templates (see heldout.fixed_words).
FIXED_TEXT = ("The user wants the word reversed.", "spelled letter by letter.", "the number of letters in",
              "has letters.", "There is 1 in", "There are 's in", "the number of 's in")

PHRASINGS = {
    "reverse": Phrasings(
        train=("Reverse the word {word}", "Reverse {word}", "What is {word} backwards?", "Spell {word} backwards.",
               "Write {word} in reverse", "reverse: {word}", 'Can you reverse the word "{word}"?', "Please reverse {word}.",
               "How do you write {word} backwards?", "{word} reversed?", "Flip the letters of {word}",
               "Give me {word} spelled backwards"),
        heldout=("What does {word} look like written backwards?", "Read {word} from right to left.",
                 "Could you write the word {word} in reverse order?"),
    ),
    "spell": Phrasings(
        train=("Spell {word}", "How do you spell {word}?", "Spell the word {word}.", "Spell out {word}", "spell: {word}",
               'Can you spell "{word}"?', "Please spell {word} letter by letter.", "Spell {word} with dashes",
               "What are the letters of {word}?", "Break {word} into letters.", "Write {word} one letter at a time"),
        heldout=("Could you spell out the word {word} for me?", "List each letter of {word}, separated by hyphens.",
                 "Give me the spelling of {word}."),
    ),
    "length": Phrasings(
        train=("How many letters are in {word}?", "How many letters does {word} have?", "Count the letters in {word}",
               "How long is the word {word}?", "Number of letters in {word}?", "letters in {word}?",
               "What is the length of {word}?", 'Please count the letters of "{word}".',
               "How many characters are in the word {word}?", "Tell me how many letters {word} has.",
               "{word} has how many letters?"),
        heldout=("Could you tell me the letter count of {word}?", "What's the number of letters in the word {word}?",
                 "Count how many letters make up {word}."),
    ),
    "letter_count": Phrasings(
        train=("How many {letter}'s are in {word}?", "How many times does {letter} appear in {word}?",
               "Count the letter {letter} in {word}", "How many {letter}'s does {word} have?", "Count the {letter}'s in {word}.",
               "how often does the letter {letter} occur in {word}?", "Number of {letter}'s in {word}?",
               "In {word}, how many {letter}'s are there?", 'Please count how many times {letter} appears in "{word}".',
               "How many times is the letter {letter} in the word {word}?", "What is the count of {letter} in {word}?"),
        heldout=("Could you tell me how many {letter}'s the word {word} contains?", "Find the number of {letter}'s in {word}.",
                 "Does {word} contain {letter}? How many times?"),
    ),
}


def reverse_answer(word: str) -> str:
    return f"`{word[::-1]}`"


def spell_answer(word: str) -> str:
    return "-".join(word)


def length_answer(word: str) -> str:
    return f"{word} has {len(word)} letters."          # words have 3-9 letters: always plural


def letter_count_answer(word: str, letter: str) -> str:
    count = word.count(letter)
    return f"There is 1 {letter} in {word}." if count == 1 else f"There are {count} {letter}'s in {word}."


def draw(rng, split: str, family: str, subtask: str | None = None) -> Drawn:
    subtask = subtask or rng.choice(SUBTASKS)
    word = rng.choice(words_for(split))     # held-out words only in the held-out split
    letter = ""
    if subtask == "reverse":
        answer, reasoning = reverse_answer(word), f"The user wants the word {word} reversed."
    elif subtask == "spell":
        answer, reasoning = spell_answer(word), f"The user wants {word} spelled letter by letter."
    elif subtask == "length":
        answer, reasoning = length_answer(word), f"The user wants the number of letters in {word}."
    else:
        absent = [c for c in string.ascii_lowercase if c not in word]
        letter = rng.choice(absent) if rng.random() < ABSENT_LETTER_PROBABILITY else rng.choice(word)
        answer, reasoning = letter_count_answer(word, letter), f"The user wants the number of {letter}'s in {word}."
    template = choose(rng, PHRASINGS[subtask], split)
    return Drawn(subtask, template, render(rng, template, word=word, letter=letter), answer, reasoning)
