"""Answer templates: given text with holes, the one primitive behind infilling and re-denoising a span.

A `FillTemplate` is a sequence of segments, each `Given` (fixed text, or fixed token ids) or a `Hole` of n
positions. The engine puts it into the answer region (`engine.generate(..., fill=template)`): given positions
start accepted / unmasked and never change, only the holes are denoised, and the model sees both sides of a
hole (within its block). The generation ends when the template is filled; no EOS is needed.

Syntax of `parse_fill` (what `/fill` and `generate --fill` take):

* `___` (three or more underscores) or `[...]` (also `[…]`) is a hole of `DEFAULT_HOLE_LENGTH` tokens;
* `___{12}` / `[...]{12}` is a hole of 12 tokens;
* a backslash before a marker keeps it as text (`\\___`, `\\[...]`).

A hole's filling is exactly its length in positions; stop and padding ids the model puts into a hole are
dropped from the text (the hole came out shorter). Given text is tokenized as plain text
(`Tokenizer.encode_text`), so `<turn|>` typed by a person stays text, and kept verbatim (a space before a hole
stays a given space).

Where blocks are cut (`split_blocks`): a DiffusionGemma canvas may be any length up to its maximum, so a block
ends before a hole that would not fit in it whole; LLaDA-2's blocks are fixed at multiples of the block length
from position 0 (its attention is block-causal), so a hole that crosses a boundary is divided there, each
part denoised inside its own block (the part before the boundary sees the text to its left and its own block;
the part after sees everything before it, the first part included). A hole longer than one block is refused.

This module is plain Python and NumPy (no MLX), so an app can build and check templates on its own thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Union

import numpy as np

from ..errors import InputError

# Long enough for a few words or a short phrase, short enough that a one-word blank is not drowned in filler;
# give `___{n}` for anything else.
DEFAULT_HOLE_LENGTH = 8

# No supported model has a block of more positions than this: a longer hole is refused before its digits are
# even read as a number (Python refuses to read more than 4,300 of them).
MAX_HOLE_LENGTH = 4096
# Holes in one template: each costs a little bookkeeping per position, and no template needs more.
MAX_HOLES = 10_000

_MARKER = re.compile(r"(\\?)(_{3,}|\[(?:\.\.\.|…)\])(?:\{(\d+)\})?")


@dataclass(frozen=True)
class Given:
    """Fixed text (tokenized by the engine) or fixed token ids."""

    text: str = ""
    ids: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Hole:
    """`length` positions to denoise; or, with `sized_like`, as many as that text has tokens (span re-denoise:
    the span's own length, counted by the engine's tokenizer)."""

    length: int | None = None
    sized_like: str | None = None

    def __post_init__(self):
        if (self.length is None) == (self.sized_like is None):
            raise InputError("a hole needs either a length or a text to take its length from")
        if self.length is not None and self.length < 1:
            raise InputError(f"a hole of length {self.length}: a hole needs at least one position")


Segment = Union[Given, Hole]


@dataclass(frozen=True)
class FillTemplate:
    segments: tuple[Segment, ...]

    def __post_init__(self):
        if not any(isinstance(s, Hole) for s in self.segments):
            raise InputError("the text has no hole to fill (write ___ or [...] where the model should write)")

    @property
    def holes(self) -> int:
        return sum(isinstance(s, Hole) for s in self.segments)


def parse_fill(text: str, default_length: int = DEFAULT_HOLE_LENGTH) -> FillTemplate:
    """`Text with ___ holes ___{3} in it.` -> a template; one-line InputError without a hole or for `{0}`."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("the text to fill is empty")
    segments: list[Segment] = []
    given: list[str] = []
    position = holes = 0
    for match in _MARKER.finditer(text):
        given.append(text[position:match.start()])
        position = match.end()
        escape, marker, length = match.groups()
        if escape:
            given.append(match.group(0)[1:])
            continue
        if given and "".join(given):
            segments.append(Given("".join(given)))
        given = []
        size = _hole_length(length, match.group(0)) if length is not None else default_length
        segments.append(Hole(size))
        holes += 1
        if holes > MAX_HOLES:
            raise InputError(f"the text has more than {MAX_HOLES} holes: fill it in parts")
    given.append(text[position:])
    if "".join(given):
        segments.append(Given("".join(given)))
    return FillTemplate(tuple(segments))


def _hole_length(digits: str, marker: str) -> int:
    shown = marker if len(marker) <= 24 else f"{marker[:16]}…}} ({len(digits)} digits)"
    significant = digits.lstrip("0")
    if len(significant) > len(str(MAX_HOLE_LENGTH)) or int(significant or "0") > MAX_HOLE_LENGTH:
        raise InputError(f"the hole {shown} is longer than any block ({MAX_HOLE_LENGTH} positions at most)")
    if not significant:
        raise InputError(f"the hole {shown!r} has length 0: a hole needs at least one position")
    return int(significant)


def revision_template(content: str, start: int, end: int) -> FillTemplate:
    """Re-denoise `content[start:end]` (character offsets) of a finished answer: the text before and after stays
    given, the span becomes a hole of the span's own token length."""
    if not 0 <= start < end <= len(content):
        raise InputError(f"select a non-empty span inside the answer (got {start}..{end} of {len(content)} "
                         "characters)")
    segments = [Given(content[:start]), Hole(sized_like=content[start:end]), Given(content[end:])]
    return FillTemplate(tuple(s for s in segments if not (isinstance(s, Given) and not s.text and not s.ids)))


def as_template(fill) -> FillTemplate:
    """A template, or text in the `parse_fill` syntax."""
    if isinstance(fill, FillTemplate):
        return fill
    if isinstance(fill, str):
        return parse_fill(fill)
    raise InputError(f"fill must be text with holes or a FillTemplate, not {type(fill).__name__}")


# ---- the template as positions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FillCanvas:
    """The template as positions: `ids` hold the given ids (-1 in holes), `hole` the hole index (-1 = given)."""

    ids: np.ndarray     # int32 [N]
    hole: np.ndarray    # int32 [N]
    # The text of each run of given positions, in order, as the person wrote it (None: given as ids): the
    # answer shows it verbatim, never re-decoded from ids (engine.generation.fill_run).
    given_texts: tuple[str | None, ...] = ()

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def leading_given(self) -> int:
        """Given positions before the first hole."""
        return int(np.flatnonzero(self.hole >= 0)[0])

    def hole_lengths(self) -> list[int]:
        return np.bincount(self.hole[self.hole >= 0]).tolist()


def tokenize(template: FillTemplate, encode_text: Callable[[str], list[int]], vocab_size: int,
             max_hole: int) -> FillCanvas:
    """Positions of `template` under the engine's plain-text tokenizer; refuses holes longer than `max_hole`
    (one block) and given ids outside the vocabulary."""
    ids: list[int] = []
    hole: list[int] = []
    texts: list[str | None] = []
    index = 0
    if template.holes > MAX_HOLES:
        raise InputError(f"the template has {template.holes} holes (at most {MAX_HOLES}): fill it in parts")
    for segment in template.segments:
        if isinstance(segment, Given):
            given = list(segment.ids) if segment.ids is not None else encode_text(segment.text)
            if any(not 0 <= int(t) < vocab_size for t in given):
                raise InputError(f"given token ids must be in [0, {vocab_size})")
            if given:
                text = segment.text if segment.ids is None else None
                if hole and hole[-1] == -1:   # joins the run before it
                    texts[-1] = None if texts[-1] is None or text is None else texts[-1] + text
                else:
                    texts.append(text)
            ids += [int(t) for t in given]
            hole += [-1] * len(given)
            continue
        length = segment.length if segment.length is not None else len(encode_text(segment.sized_like))
        if length < 1:
            raise InputError("the span to re-denoise has no tokens: select some text")
        if length > max_hole:
            raise InputError(f"a hole of {length} tokens is longer than one block ({max_hole}): make it shorter "
                             "or split it with some given text")
        ids += [-1] * length
        hole += [index] * length
        index += 1
    return FillCanvas(np.array(ids, dtype=np.int32), np.array(hole, dtype=np.int32), tuple(texts))


def split_blocks(hole: np.ndarray, start: int, first_capacity: int, capacity: int,
                 divide_holes: bool) -> list[tuple[int, int]]:
    """Cut positions [start, N) of a template into blocks: (begin, end) pairs, in order.

    With `divide_holes` (fixed-size blocks) the first block holds `first_capacity` positions (LLaDA-2: what the
    prompt's tail leaves of it), the others `capacity`, each full but the last. Without it (variable blocks,
    `first_capacity` == `capacity`) a block ends before a hole that would not fit whole (holes are never longer
    than `capacity`)."""
    if not divide_holes and first_capacity != capacity:
        raise ValueError("variable-length blocks all have the same capacity")
    blocks: list[tuple[int, int]] = []
    total = len(hole)
    begin, room = start, first_capacity
    while begin < total:
        end = min(begin + room, total)
        if not divide_holes and end < total and hole[end] >= 0 and hole[end - 1] == hole[end]:
            cut = end
            while cut > begin and hole[cut - 1] == hole[end]:
                cut -= 1
            end = cut if cut > begin else end  # (a hole that starts a block fits: it is at most `capacity` long)
        blocks.append((begin, end))
        begin, room = end, capacity
    return blocks
