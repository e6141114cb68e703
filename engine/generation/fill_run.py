"""A template (engine.fill) in the block loop: which positions each block holds, what it emits, where the
filled text lies.

The template's leading given text (before the first hole) is encoded with the prompt, exactly as a committed
block would be (both families encode committed blocks into the cache the way they encode a prompt; for
LLaDA-2 the given positions of the first block are its prompt tail, which is what unmasked positions are).
That is also why a conversation's prefix cache stays valid when a span of an answer is re-denoised: the new
request's prompt is the old one, and the given text before the span is the old answer's start, so the
session serves the longest common prefix of what it cached (prompt + old answer) and of prompt + given text,
and trims the rest; nothing of the old answer past the first differing token is ever read from the cache.
The rest of the template is cut into blocks (engine.fill.split_blocks) whose given positions the denoisers
keep fixed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..fill import FillCanvas, filled_spans, split_blocks
from ..text import settled


@dataclass(frozen=True)
class BlockFill:
    """The given positions of one block's answer part (the positions after its prompt tail)."""

    ids: np.ndarray          # int32 [n]: given ids, anything where not fixed
    fixed: np.ndarray        # bool [n]
    lead_in_tail: int = 0    # how many positions of the block's prompt tail are given template text


class PlainText:
    """A fill's answer has no reasoning channel: the text is the decoded template, held back only while it
    could still change (it ends inside a multi-byte character or a run of byte tokens; the interface of
    engine.text.TextAssembler)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.content = ""
        self.reasoning = ""

    def feed(self, ids) -> tuple[str, str]:
        self.ids += [int(i) for i in ids]
        text = self.tokenizer.decode(settled(self.ids, getattr(self.tokenizer, "byte_ids", ())))
        return self._advance(text.rstrip("\ufffd")), ""

    def finish(self) -> tuple[str, str]:
        return self._advance(self.tokenizer.decode(self.ids)), ""

    def _advance(self, text: str) -> str:
        delta = text[len(self.content):] if text.startswith(self.content) else ""
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
        self.bounds: dict[int, list[int]] = {}

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
        for position, token in zip(range(begin, end), answer_ids):
            hole = int(self.canvas.hole[position])
            if hole >= 0:
                bounds = self.bounds.setdefault(hole, [len(self.emitted) + len(tokens)] * 2)
                if int(token) in self.dropped:
                    continue
                tokens.append(int(token))
                bounds[1] = len(self.emitted) + len(tokens)
            else:
                tokens.append(int(token))
        self.emitted += tokens
        return tokens, ("stop" if index == len(self.blocks) - 1 else None)

    def spans(self, content: str) -> tuple[tuple[int, int], ...]:
        """Character spans of the fillings so far, clipped to the text delivered so far."""
        spans = filled_spans(self.tokenizer.decode, self.emitted, [tuple(self.bounds[h]) for h in sorted(self.bounds)])
        return tuple((min(a, len(content)), min(b, len(content))) for a, b in spans)
