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

import os
import re
from dataclasses import dataclass
from typing import Callable, Sequence, Union

import numpy as np

from .errors import InputError

# Long enough for a few words or a short phrase, short enough that a one-word blank is not drowned in filler;
# give `___{n}` for anything else.
DEFAULT_HOLE_LENGTH = 8

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
    position = 0
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
        size = int(length) if length is not None else default_length
        if size == 0:
            raise InputError(f"the hole {match.group(0)!r} has length 0: a hole needs at least one position")
        segments.append(Hole(size))
    given.append(text[position:])
    if "".join(given):
        segments.append(Given("".join(given)))
    return FillTemplate(tuple(segments))


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
    index = 0
    for segment in template.segments:
        if isinstance(segment, Given):
            given = list(segment.ids) if segment.ids is not None else encode_text(segment.text)
            if any(not 0 <= int(t) < vocab_size for t in given):
                raise InputError(f"given token ids must be in [0, {vocab_size})")
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
    return FillCanvas(np.array(ids, dtype=np.int32), np.array(hole, dtype=np.int32))


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


# ---- where the filled text lies in the answer ---------------------------------------------------------------


def filled_spans(decode: Callable[[Sequence[int]], str], ids: Sequence[int],
                 bounds: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Character spans (start, end) in `decode(ids)` of each hole's filling, given as token ranges `bounds`
    (a hole whose filling was all stop / padding ids has an empty range, and gets an empty span)."""
    ids = [int(t) for t in ids]
    text = decode(ids)
    offsets: dict[int, int] = {}

    def offset(count: int) -> int:
        # How much of the text the first `count` tokens decode to: a prefix that ends inside a multi-byte
        # character decodes to U+FFFD there, where the whole text has the character, so only the part they
        # share counts.
        if count not in offsets:
            prefix = decode(ids[:count])
            if not text.startswith(prefix):
                prefix = prefix.rstrip("\ufffd")
            offsets[count] = len(prefix) if text.startswith(prefix) else len(os.path.commonprefix([prefix, text]))
        return offsets[count]

    return tuple((offset(a), offset(b)) for a, b in bounds)
