"""Answer templates (engine.generation.fill), pure: the `/fill` syntax, tokenizing, cutting into blocks."""

import random

import numpy as np
import pytest

from engine.errors import InputError
from engine.generation.fill import (
    DEFAULT_HOLE_LENGTH,
    FillTemplate,
    Given,
    Hole,
    as_template,
    parse_fill,
    revision_template,
    split_blocks,
    tokenize,
)


def test_parse_markers_lengths_and_escapes():
    template = parse_fill("Text with ___ holes [...]{3} in ____{12} it[…].")
    assert template.segments == (
        Given("Text with "), Hole(DEFAULT_HOLE_LENGTH), Given(" holes "), Hole(3), Given(" in "), Hole(12),
        Given(" it"), Hole(DEFAULT_HOLE_LENGTH), Given("."))
    assert template.holes == 4
    assert parse_fill("___").segments == (Hole(DEFAULT_HOLE_LENGTH),)
    assert parse_fill(r"a \___ b ___ c \[...]").segments == (Given("a ___ b "), Hole(DEFAULT_HOLE_LENGTH),
                                                             Given(" c [...]"))
    # two underscores, braces that are not a length, and brackets around other things are text
    assert parse_fill("a__b ___{x} [..] {3}").segments == (Given("a__b "), Hole(DEFAULT_HOLE_LENGTH),
                                                           Given("{x} [..] {3}"))
    assert parse_fill("x ___ y", default_length=2).segments[1] == Hole(2)
    assert as_template("a ___") == parse_fill("a ___")


@pytest.mark.parametrize("text, message", [
    ("no holes here", "no hole"),
    (r"only \___ escaped", "no hole"),
    ("a ___{0} b", "length 0"),
    ("   ", "empty"),
])
def test_parse_refusals_are_one_line(text, message):
    with pytest.raises(InputError, match=message) as error:
        parse_fill(text)
    assert "\n" not in str(error.value)


def test_template_refusals():
    with pytest.raises(InputError, match="at least one position"):
        Hole(0)
    with pytest.raises(InputError, match="no hole"):
        FillTemplate((Given("x"),))
    with pytest.raises(InputError, match="either a length"):
        Hole()
    with pytest.raises(InputError, match="FillTemplate"):
        as_template(42)


def fake_encode(text: str) -> list[int]:
    return [ord(c) for c in text]  # one token per character


def fake_decode(ids) -> str:
    return "".join(chr(i) for i in ids)


def test_tokenize_positions_and_limits():
    canvas = tokenize(parse_fill("ab ___{3} c[...]{2}"), fake_encode, 512, max_hole=8)
    assert canvas.ids.tolist() == [97, 98, 32, -1, -1, -1, 32, 99, -1, -1]
    assert canvas.hole.tolist() == [-1, -1, -1, 0, 0, 0, -1, -1, 1, 1]
    assert canvas.leading_given == 3 and canvas.hole_lengths() == [3, 2]
    with pytest.raises(InputError, match="longer than one block"):
        tokenize(parse_fill("a ___{9}"), fake_encode, 512, max_hole=8)
    with pytest.raises(InputError, match="token ids"):
        tokenize(FillTemplate((Given(ids=(5, 600)), Hole(1))), fake_encode, 512, max_hole=8)
    sized = tokenize(FillTemplate((Hole(sized_like="four"),)), fake_encode, 512, max_hole=8)
    assert sized.hole.tolist() == [0, 0, 0, 0]


def test_blocks_end_before_a_hole_that_would_not_fit():
    # given 0-3, hole A 4-8, given 9, hole B 10-15, given 16-17
    hole = np.array([-1] * 4 + [0] * 5 + [-1] + [1] * 6 + [-1] * 2)
    assert split_blocks(hole, 4, 8, 8, divide_holes=False) == [(4, 10), (10, 18)]
    assert split_blocks(hole, 0, 8, 8, divide_holes=False) == [(0, 4), (4, 10), (10, 18)]
    with pytest.raises(ValueError):
        split_blocks(hole, 4, 3, 8, divide_holes=False)
    # fixed-size blocks: a hole crossing a boundary is divided there
    assert split_blocks(hole, 4, 3, 8, divide_holes=True) == [(4, 7), (7, 15), (15, 18)]


def test_random_layouts_never_split_a_hole_unless_blocks_are_fixed():
    rng = random.Random(0)
    for _ in range(300):
        capacity = rng.randint(1, 12)
        hole: list[int] = []
        for index in range(rng.randint(1, 6)):
            hole += [-1] * rng.randint(0, 5) + [index] * rng.randint(1, capacity)
        hole_array = np.array(hole + [-1] * rng.randint(0, 5))
        start = int(np.flatnonzero(hole_array >= 0)[0])
        first = rng.randint(1, capacity)
        for divide in (False, True):
            room = first if divide else capacity
            blocks = split_blocks(hole_array, start, room, capacity, divide)
            assert blocks[0][0] == start and blocks[-1][1] == len(hole_array)
            assert all(a < b and b == c for (a, b), (c, _) in zip(blocks, blocks[1:]))
            assert blocks[0][1] - blocks[0][0] <= room
            assert all(b - a <= capacity for a, b in blocks[1:])
            if divide:
                assert all(b - a == capacity for a, b in blocks[1:-1])
            else:
                for _, end in blocks[:-1]:
                    assert not (hole_array[end] >= 0 and hole_array[end - 1] == hole_array[end])


def test_revision_template():
    content = "The cat sat on the mat."
    template = revision_template(content, 4, 7)
    assert template.segments == (Given("The "), Hole(sized_like="cat"), Given(" sat on the mat."))
    assert revision_template(content, 0, len(content)).segments == (Hole(sized_like=content),)
    for start, end in ((3, 3), (5, 2), (-1, 4), (0, 99)):
        with pytest.raises(InputError, match="span"):
            revision_template(content, start, end)
