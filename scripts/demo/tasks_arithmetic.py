"""Arithmetic: +, - and × on non-negative integers, answered as `47 + 385 = **432**`.

The operand ranges are module constants that the trainer may narrow (assign before sampling) when a tiny
model cannot learn the full range; they are read at every draw.
"""

from __future__ import annotations

from .heldout import draw_tuple
from .phrasing import Drawn, Phrasings, choose, number, render

ADD_SUB_RANGE = (0, 999)        # both operands of + and -
MUL_FIRST_RANGE = (0, 999)      # one factor of ×
MUL_SECOND_RANGE = (0, 99)      # the other factor (the prompt puts either one first)

SUBTASKS = ("add", "subtract", "multiply")
SYMBOLS = {"add": "+", "subtract": "-", "multiply": "×"}
PLACES = ("ones", "tens", "hundreds", "thousands")   # operands have at most 3 digits
# The prose of the worked computations (its words are never held out, see heldout.fixed_words).
FIXED_TEXT = (" ".join(PLACES), ", write 2, carry 1.", ", borrow 1.", " So 5.", " is negative: do ",
              ", and the answer is ", ", since one factor is 0.")

PHRASINGS = {
    "add": Phrasings(
        train=("What is {a} + {b}?", "{a} plus {b}?", "Compute {a}+{b}", "what's {a} plus {b}", "{a} + {b} =",
               "Add {a} and {b}.", "calculate {a} + {b}", "How much is {a} + {b}?", "{a}+{b}=",
               "What is the sum of {a} and {b}?", "Please add {a} to {b}.", "Find {a} + {b}.", "Evaluate {a} + {b}",
               "Tell me {a} plus {b}.", "What do you get if you add {a} and {b}?", "{a} + {b}"),
        heldout=("What's the total of {a} and {b}?", "Work out {a} + {b}, please.", "{a} and {b} added together is?"),
    ),
    "subtract": Phrasings(
        train=("What is {a} - {b}?", "{a} minus {b}?", "Compute {a}-{b}", "what's {a} minus {b}", "{a} - {b} =",
               "Subtract {b} from {a}.", "calculate {a} − {b}", "How much is {a} - {b}?", "{a}-{b}=",
               "Take {b} away from {a}.", "What is {a} less {b}?", "Find {a} − {b}.", "Evaluate {a} - {b}",
               "Please subtract {b} from {a}.", "What is the difference {a} - {b}?", "{a} − {b}"),
        heldout=("What do you get when you subtract {b} from {a}?", "Work out {a} minus {b}, please.",
                 "{a} take away {b} is?"),
    ),
    "multiply": Phrasings(
        train=("What is {a} × {b}?", "{a} times {b}?", "Compute {a}*{b}", "what's {a} times {b}", "{a} x {b} =",
               "Multiply {a} by {b}.", "calculate {a} × {b}", "How much is {a} * {b}?", "{a}*{b}=",
               "What is the product of {a} and {b}?", "Please multiply {a} by {b}.", "Find {a} x {b}.",
               "Evaluate {a} × {b}", "Tell me {a} times {b}.", "{a} × {b}"),
        heldout=("What do you get if you multiply {a} by {b}?", "Work out {a} times {b}, please.",
                 "{a} multiplied by {b} is?"),
    ),
}


def result(op: str, a: int, b: int) -> int:
    return a + b if op == "add" else a - b if op == "subtract" else a * b


def answer(op: str, a: int, b: int) -> str:
    return f"{a} {SYMBOLS[op]} {b} = **{result(op, a, b)}**"


def _operands(op: str):
    def make(rng):
        if op == "multiply":
            a, b = number(rng, *MUL_FIRST_RANGE), number(rng, *MUL_SECOND_RANGE)
            if rng.random() < 0.5:
                a, b = b, a
        else:
            a, b = number(rng, *ADD_SUB_RANGE), number(rng, *ADD_SUB_RANGE)
        # + and × are commutative: hash the unordered pair, or "3 + 5" in training would leak held-out "5 + 3".
        key = (a, b) if op == "subtract" else (min(a, b), max(a, b))
        return key, (a, b)
    return make


def draw(rng, split: str, family: str, subtask: str | None = None) -> Drawn:
    op = subtask or rng.choice(SUBTASKS)
    a, b = draw_tuple(rng, split, op, _operands(op))
    template = choose(rng, PHRASINGS[op], split)
    return Drawn(op, template, render(rng, template, a=a, b=b), answer(op, a, b), worked(op, a, b))


# ---- worked computations for the thought channel: one fixed, column-wise format per operation ----------


def _digits(n: int, width: int) -> list[int]:
    """Least significant first, padded with zeros to `width`."""
    return [int(c) for c in reversed(str(n).rjust(width, "0"))]


def add_steps(a: int, b: int) -> str:
    width = max(len(str(a)), len(str(b)))
    steps, carry = [], 0
    for place, x, y in zip(PLACES, _digits(a, width), _digits(b, width)):
        total = x + y + carry
        terms = f"{x} + {y}" + (f" + {carry}" if carry else "")
        carry = total // 10
        steps.append(f"{place}: {terms} = {total}" + (f", write {total % 10}, carry 1." if carry else "."))
    if carry:
        steps.append(f"{PLACES[width]}: 1.")
    return " ".join(steps) + f" So {a + b}."


def _column_subtract(a: int, b: int) -> list[str]:
    """a >= b. Each column shows the top digit after the borrow it lends (+10 when it borrows)."""
    width = len(str(a))
    steps, borrow = [], 0
    for place, x, y in zip(PLACES, _digits(a, width), _digits(b, width)):
        top = x - borrow
        borrow = 1 if top < y else 0
        top += 10 * borrow
        steps.append(f"{place}: {top} - {y} = {top - y}" + (", borrow 1." if borrow else "."))
    return steps


def subtract_steps(a: int, b: int) -> str:
    if a >= b:
        return " ".join(_column_subtract(a, b)) + f" So {a - b}."
    return (f"{a} - {b} is negative: do {b} - {a}. " + " ".join(_column_subtract(b, a))
            + f" So {b - a}, and the answer is {a - b}.")


def multiply_steps(a: int, b: int) -> str:
    if a == 0 or b == 0:
        return f"{a} × {b} = 0, since one factor is 0."
    # Split the longer factor into its place values (ties: the second), so that each partial product is the
    # shorter factor times one digit and a power of ten: "47 × 385 = 47 × 300 + 47 × 80 + 47 × 5".
    split_first = len(str(a)) > len(str(b))
    parts_of = a if split_first else b
    parts = [int(c) * 10 ** i for i, c in enumerate(reversed(str(parts_of))) if c != "0"][::-1]
    terms = [f"{p} × {b}" if split_first else f"{a} × {p}" for p in parts]
    products = [p * (b if split_first else a) for p in parts]
    if len(parts) == 1:
        return f"{a} × {b} = {a * b}." if terms[0] == f"{a} × {b}" else f"{a} × {b} = {terms[0]} = {a * b}."
    return f"{a} × {b} = {' + '.join(terms)} = {' + '.join(map(str, products))} = {a * b}."


def worked(op: str, a: int, b: int) -> str:
    return add_steps(a, b) if op == "add" else subtract_steps(a, b) if op == "subtract" else multiply_steps(a, b)
