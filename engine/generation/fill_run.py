"""A template (engine.generation.fill) in the block loop: which positions each block holds, what it emits, where the
filled text lies.

The template's leading given text (before the first hole) is encoded with the prompt, exactly as a committed
block would be (both families encode committed blocks into the cache the way they encode a prompt; for
LLaDA-2 the given positions of the first block are its prompt tail, which is what unmasked positions are).
That is also why a conversation's prefix cache stays valid when a span of an answer is re-denoised: the new
request's prompt is the old one, and the given text before the span is the old answer's start, so the
session serves the longest common prefix of what it cached (prompt + old answer) and of prompt + given text,
and trims the rest; nothing of the old answer past the first differing token is ever read from the cache.
The rest of the template is cut into blocks (engine.generation.fill.split_blocks) whose given positions the denoisers
keep fixed. The answer's text is assembled run by run (`FillText`), so given text stays byte-exact and
finding where the fillings lie costs nothing extra: both are linear in the template's length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fill import FillCanvas, split_blocks


@dataclass(frozen=True)
class BlockFill:
    """The given positions of one block's answer part (the positions after its prompt tail)."""

    ids: np.ndarray          # int32 [n]: given ids, anything where not fixed
    fixed: np.ndarray        # bool [n]
    lead_in_tail: int = 0    # how many positions of the block's prompt tail are given template text


class FillText:
    """A fill's answer text (the interface of engine.generation.text.TextAssembler; no reasoning channel): built run by run
    — each run of given positions is the given text verbatim, each hole its filling decoded on its own — and
    delivered once a run is complete. Decoding the whole answer at once would let a hole's bytes join the
    given text's: a tokenizer with byte fallback decodes a run of byte tokens that is not valid UTF-8 as one
    U+FFFD per byte, so a given 日本 next to a hole filled with a stray byte came out as U+FFFD."""

    def __init__(self, filling: FillRun):
        self.filling = filling
        self.content = ""
        self.reasoning = ""
        self._delivered = 0          # pieces of the filling's text already in `content`

    def feed(self, ids) -> tuple[str, str]:
        return self._advance(), ""

    def finish(self) -> tuple[str, str]:
        self._advance()
        return "", ""

    def _advance(self) -> str:
        delta = "".join(self.filling.pieces[self._delivered:])
        self._delivered = len(self.filling.pieces)
        self.content += delta
        return delta


class FillRun:
    """The template's blocks, in order, and what each emits."""

    def __init__(self, canvas: FillCanvas, denoiser, stops: frozenset[int], tokenizer):
        self.canvas = canvas
        self.capacity, self.fixed_blocks, self.padding_id = denoiser.fill_layout()
        self.dropped = set(stops) | set(getattr(tokenizer, "hidden_ids", ()) or ())
        self.tokenizer = tokenizer
        self.lead = canvas.leading_given
        self.blocks: list[tuple[int, int]] | None = None
        self.emitted: list[int] = []          # every token emitted so far (the answer's ids)
        hole = canvas.hole
        # A run: consecutive positions of one hole, or of given text. Its index for every position.
        change = np.concatenate([[True], hole[1:] != hole[:-1]]) if len(hole) else np.zeros(0, bool)
        self.run_of = np.cumsum(change) - 1
        self.run_is_hole = hole[change] >= 0
        given_runs = np.cumsum(~self.run_is_hole) - 1
        self.given_text = {int(r): (canvas.given_texts[int(given_runs[r])]
                                    if int(given_runs[r]) < len(canvas.given_texts) else None)
                           for r in np.flatnonzero(~self.run_is_hole)}
        self.run_ids: list[int] = []          # the kept ids of the run being emitted
        self.runs_done = 0
        self.pieces: list[str] = []           # the text of every complete run, in order
        self.length = 0                       # of that text, in characters
        self.hole_spans: list[tuple[int, int]] = []   # each complete hole's filling in that text, in hole order
        self._anchor = _anchor_id(tokenizer)

    def encoder_prompt(self, prompt_ids: list[int]) -> list[int]:
        return list(prompt_ids) + [int(t) for t in self.canvas.ids[:self.lead]]

    def block(self, index: int, tail: int) -> tuple[int, BlockFill]:
        """(block length, given positions) of block `index`, whose prompt tail has `tail` positions."""
        if self.blocks is None:
            self.blocks = split_blocks(self.canvas.hole, self.lead, self.capacity - tail, self.capacity,
                                       self.fixed_blocks)
        begin, end = self.blocks[index]
        ids, fixed = self.canvas.ids[begin:end], self.canvas.hole[begin:end] < 0
        length = tail + (end - begin)
        if self.padding_id is not None and length < self.capacity:  # fixed-size blocks: the answer ends here
            pad = self.capacity - length
            ids = np.concatenate([ids, np.full(pad, self.padding_id, np.int32)])
            fixed = np.concatenate([fixed, np.ones(pad, bool)])
            length = self.capacity
        # The tail ends the encoder's prompt, so its last positions are the template's leading given text.
        lead_in_tail = min(tail, self.lead) if index == 0 else 0
        return length, BlockFill(ids.astype(np.int32), fixed, lead_in_tail)

    def emit(self, index: int, answer_ids: list[int]) -> tuple[list[int], str | None]:
        """The tokens block `index` emits (given ones, and fillings without stop / padding ids), and the finish
        reason ("stop" once the template is filled, else None)."""
        begin, end = self.blocks[index]
        tokens = [int(t) for t in self.canvas.ids[:self.lead]] if index == 0 else []
        self.run_ids += tokens
        for position, token in zip(range(begin, end), answer_ids):
            self._reach(int(self.run_of[position]))
            if self.canvas.hole[position] >= 0 and int(token) in self.dropped:
                continue
            tokens.append(int(token))
            self.run_ids.append(int(token))
        last = index == len(self.blocks) - 1
        if last:
            self._reach(len(self.run_is_hole))
        self.emitted += tokens
        return tokens, ("stop" if last else None)

    def _reach(self, run: int) -> None:
        """Complete every run before `run` (the position being emitted belongs to it)."""
        while self.runs_done < run:
            done = self.runs_done
            if self.run_is_hole[done]:
                piece = self._decode_alone(self.run_ids)
                self.hole_spans.append((self.length, self.length + len(piece)))
            else:
                given = self.given_text.get(done)
                piece = given if given is not None else self._decode_alone(self.run_ids)
            self.pieces.append(piece)
            self.length += len(piece)
            self.run_ids = []
            self.runs_done += 1

    def _decode_alone(self, ids: list[int]) -> str:
        """`ids` decoded as they read inside a text: after an ordinary token, so a decoder that strips the
        text's first space (SentencePiece's) keeps theirs, and joined with no byte of a neighbouring run."""
        if not ids:
            return ""
        if self._anchor is None:
            return self.tokenizer.decode(ids)
        head = self.tokenizer.decode([self._anchor])
        both = self.tokenizer.decode([self._anchor] + ids)
        return both[len(head):] if both.startswith(head) else self.tokenizer.decode(ids)

    def spans(self, content: str) -> tuple[tuple[int, int], ...]:
        """Character spans of the fillings so far (`content`, FillText's, holds every complete run)."""
        return tuple(self.hole_spans)


def _anchor_id(tokenizer) -> int | None:
    """An ordinary one-token word of the tokenizer (the left context `_decode_alone` gives a run)."""
    encode = getattr(tokenizer, "encode_text", None)
    if encode is None:
        return None
    ids = encode("a")
    return int(ids[-1]) if ids else None
