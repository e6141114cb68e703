"""Counting: up, down, or in steps, 2-80 terms within 0..999, every term written out (`7, 8, 9, ...`).

These answers are long on purpose: up to ~400 characters, so they span several denoising blocks.
"""

from __future__ import annotations

from .heldout import draw_tuple
from .phrasing import Drawn, Phrasings, choose, number, render

SUBTASKS = ("up", "down", "step")
VALUE_RANGE = (0, 999)
TERMS = (2, 80)
STEPS = (2, 3, 4, 5, 10, 20, 25, 50, 100)
DOWNWARD_STEP_PROBABILITY = 0.25
ON_GRID_PROBABILITY = 0.6   # "by 5s from 35" more often than "by 5s from 37", as people ask it

# Prose this module writes besides the templates (see heldout.fixed_words).
FIXED_TEXT = ("The user wants the numbers from to in steps of",)

PHRASINGS = {
    "up": Phrasings(
        train=("Count from {a} to {b}", "Count from {a} to {b}.", "count {a} to {b}", "Please count from {a} to {b}.",
               "Can you count from {a} to {b}?", "List the numbers from {a} to {b}", "Count up from {a} to {b}",
               "Write the numbers {a} through {b}.", "Numbers from {a} to {b}, please", "Start at {a} and count to {b}",
               "Count {a}-{b}", "Give me all numbers from {a} to {b}"),
        heldout=("Could you list every whole number between {a} and {b}, inclusive?",
                 "I'd like you to count upward from {a} until you reach {b}.", "Enumerate {a} to {b}."),
    ),
    "down": Phrasings(
        train=("Count down from {a} to {b}", "Count backwards from {a} to {b}.", "count down {a} to {b}",
               "Please count down from {a} to {b}.", "Can you count backwards from {a} to {b}?",
               "List the numbers from {a} down to {b}", "Start at {a} and count down to {b}",
               "Write the numbers from {a} down to {b}.", "Countdown from {a} to {b}", "Count from {a} down to {b}",
               "Go from {a} down to {b}"),
        heldout=("Could you count in reverse from {a} to {b}?", "I'd like a countdown starting at {a} and ending at {b}.",
                 "Enumerate {a} down to {b}."),
    ),
    "step": Phrasings(
        train=("Count from {a} to {b} by {s}s", "Count from {a} to {b} in steps of {s}.", "Count by {s}s from {a} to {b}",
               "count from {a} to {b}, step {s}", "Please count from {a} to {b} in steps of {s}.",
               "Can you count from {a} to {b} by {s}s?", "Skip count by {s} from {a} to {b}",
               "Go from {a} to {b} in increments of {s}", "Count {a} to {b} by {s}",
               "Start at {a} and count to {b} in steps of {s}", "Count in {s}s from {a} to {b}"),
        heldout=("Could you count from {a} to {b}, going {s} at a time?",
                 "I'd like the numbers from {a} to {b}, jumping by {s} each time.",
                 "Enumerate {a} to {b} with a stride of {s}."),
    ),
}


def terms(start: int, end: int, step: int) -> list[int]:
    """Inclusive; `step` is positive, the direction comes from start vs end."""
    return list(range(start, end + 1, step)) if end >= start else list(range(start, end - 1, -step))


def count_answer(start: int, end: int, step: int) -> str:
    return ", ".join(map(str, terms(start, end, step)))


def _range(subtask: str):
    def make(rng):
        step = rng.choice(STEPS) if subtask == "step" else 1
        low, high = VALUE_RANGE
        n = rng.randint(TERMS[0], min(TERMS[1], (high - low) // step + 1))
        span = (n - 1) * step
        first = number(rng, low, high - span)
        if step > 1 and rng.random() < ON_GRID_PROBABILITY:
            first = min(high - span, -(-first // step) * step)
        down = subtask == "down" or subtask == "step" and rng.random() < DOWNWARD_STEP_PROBABILITY
        start, end = (first + span, first) if down else (first, first + span)
        return (start, end, step), (start, end, step)
    return make


def draw(rng, split: str, family: str, subtask: str | None = None) -> Drawn:
    subtask = subtask or rng.choice(SUBTASKS)
    start, end, step = draw_tuple(rng, split, "count", _range(subtask))
    template = choose(rng, PHRASINGS[subtask], split)
    prompt = render(rng, template, a=start, b=end, s=step)
    reasoning = f"The user wants the numbers from {start} to {end}" + (f" in steps of {step}." if step > 1 else ".")
    return Drawn(subtask, template, prompt, count_answer(start, end, step), reasoning)
