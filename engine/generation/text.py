"""From emitted token ids to the two streams people read: reasoning and the answer.

Blocks arrive whole, but a marker (`<|channel>`, `<channel|>`, `<think>`, ...) or a multi-byte character can
straddle two blocks. `split_reasoning` is a pure function over the whole text so far; while the text is not
final it holds back anything that could still turn into a marker (or complete a character), so the
deltas `TextAssembler` hands out never have to be taken back.
"""

from __future__ import annotations

from typing import Sequence

# (open, close) pairs. Gemma 4 writes `<|channel>thought\n ... <channel|>`; some checkpoints use <think>.
MARKERS = (("<|channel>", "<channel|>"), ("<think>", "</think>"))
CHANNEL_LABEL = "thought"


def _partial_suffix(text: str, markers: Sequence[str]) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of one of `markers`."""
    best = 0
    for marker in markers:
        for size in range(min(len(marker) - 1, len(text)), best, -1):
            if text.endswith(marker[:size]):
                best = size
                break
    return best


def split_reasoning(text: str, final: bool) -> tuple[str, str]:
    """Split `text` into (reasoning, content). When not `final`, unsafe tails are withheld."""
    if not final:
        cut = len(text) - len(text.rstrip("\ufffd"))  # an incomplete UTF-8 sequence decodes to U+FFFD
        if cut:
            text = text[:-cut]
    reasoning: list[str] = []
    content: list[str] = []
    position = 0
    opens = [m[0] for m in MARKERS]
    while True:
        found = [(text.find(o, position), o, c) for o, c in MARKERS if text.find(o, position) >= 0]
        if not found:
            tail = text[position:]
            if not final:
                tail = tail[: len(tail) - _partial_suffix(tail, opens)]
            content.append(tail)
            break
        start, open_marker, close_marker = min(found)
        content.append(text[position:start])
        body_start = start + len(open_marker)
        end = text.find(close_marker, body_start)
        body = text[body_start:] if end < 0 else text[body_start:end]
        if open_marker == "<|channel>":
            stripped = body.lstrip()
            if end < 0 and not final and CHANNEL_LABEL.startswith(stripped):
                body = ""  # "thou" could still become the channel label
            elif stripped.startswith(CHANNEL_LABEL):
                body = stripped[len(CHANNEL_LABEL):]
        if end < 0:
            if not final:
                body = body[: len(body) - _partial_suffix(body, [close_marker])]
            reasoning.append(body)
            break
        reasoning.append(body)
        position = end + len(close_marker)
    return "".join(reasoning).strip() if final else "".join(reasoning).lstrip(), _clean_content("".join(content), final)


def _clean_content(content: str, final: bool) -> str:
    content = content.lstrip()
    return content.rstrip() if final else content


def settled(ids: Sequence[int], byte_ids) -> Sequence[int]:
    """`ids` without their trailing run of byte-fallback tokens: how those read depends on the bytes that may
    still follow them (a lone byte token can turn from a character into U+FFFD), so text decoded from them
    is not final until the run ends."""
    end = len(ids)
    while end and int(ids[end - 1]) in byte_ids:
        end -= 1
    return ids[:end]


class TextAssembler:
    """Feed emitted ids block by block; get the new reasoning/content text each time."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.content = ""
        self.reasoning = ""

    def feed(self, ids: Sequence[int]) -> tuple[str, str]:
        self.ids.extend(int(i) for i in ids)
        return self._advance(final=False)

    def finish(self) -> tuple[str, str]:
        return self._advance(final=True)

    def _advance(self, final: bool) -> tuple[str, str]:
        ids = self.ids if final else settled(self.ids, getattr(self.tokenizer, "byte_ids", ()))
        reasoning, content = split_reasoning(self.tokenizer.decode(ids), final)
        reasoning_delta = _delta(self.reasoning, reasoning)
        content_delta = _delta(self.content, content)
        self.reasoning += reasoning_delta
        self.content += content_delta
        return content_delta, reasoning_delta


def _delta(old: str, new: str) -> str:
    # Withheld tails make every intermediate text a prefix of the final one; trailing whitespace that
    # the final strip removes is the one exception, and it is simply never emitted twice.
    return new[len(old):] if new.startswith(old) else ""
