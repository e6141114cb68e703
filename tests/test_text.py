"""Reasoning/content splitting across block boundaries."""

import pytest

from engine.generation.text import TextAssembler, split_reasoning


class CharTokenizer:
    """Each id is one character (ids are code points), so tests can cut text anywhere."""

    def decode(self, ids):
        return "".join(chr(i) for i in ids)


def stream(text: str, cuts: list[int]):
    assembler = TextAssembler(CharTokenizer())
    ids = [ord(c) for c in text]
    deltas = []
    start = 0
    for cut in cuts + [len(ids)]:
        deltas.append(assembler.feed(ids[start:cut]))
        start = cut
    deltas.append(assembler.finish())
    return assembler, deltas


GEMMA = "<|channel>thought\nThe sky scatters blue light.<channel|>Because of Rayleigh scattering."


def test_split_complete_gemma_channel():
    assert split_reasoning(GEMMA, final=True) == ("The sky scatters blue light.", "Because of Rayleigh scattering.")


def test_split_think_tags_and_plain_text():
    assert split_reasoning("<think>hmm</think>\n\nAnswer", final=True) == ("hmm", "Answer")
    assert split_reasoning("just an answer", final=True) == ("", "just an answer")


@pytest.mark.parametrize("cut", range(1, len(GEMMA)))
def test_every_cut_point_gives_the_same_streams(cut):
    assembler, deltas = stream(GEMMA, [cut])
    assert "".join(d[1] for d in deltas) == "The sky scatters blue light."
    assert "".join(d[0] for d in deltas) == "Because of Rayleigh scattering."
    # No marker text ever leaks into either stream, however the blocks are cut.
    for content, reasoning in deltas:
        assert "<" not in reasoning and "channel" not in content and "thought" not in content


def test_partial_marker_is_held_back_until_the_next_block():
    assembler = TextAssembler(CharTokenizer())
    content, reasoning = assembler.feed([ord(c) for c in "Hello <|chan"])
    assert content == "Hello " and reasoning == ""
    content, reasoning = assembler.feed([ord(c) for c in "nel>thought\nidea"])
    assert reasoning == "idea" and content == ""


def test_marker_lookalike_that_does_not_complete_is_released_at_the_end():
    assembler, deltas = stream("a <|chan", [3])
    assert assembler.content == "a <|chan"


def test_incomplete_utf8_is_held_back():
    assembler = TextAssembler(CharTokenizer())
    content, _ = assembler.feed([ord("a"), 0xFFFD])
    assert content == "a"
    assembler.ids[-1] = ord("é")  # the next block completes the character
    content, _ = assembler.feed([])
    assert content == "é"


def test_a_run_of_byte_tokens_is_held_back_until_it_ends():
    # Byte-fallback tokens decode as a run: <0x18> alone reads as a character, but followed by the stray
    # continuation byte <0x8F> the whole run is invalid UTF-8 and both read as U+FFFD. Delivering the first
    # reading would make every later text disagree with it, and the rest of the answer was lost.
    from conftest import CHECKPOINTS

    import engine

    tokenizer = engine.load(CHECKPOINTS / "dg_text").tokenizer
    byte_18, byte_8f = tokenizer.id_of("<0x18>"), tokenizer.id_of("<0x8F>")
    assert {byte_18, byte_8f} <= tokenizer.byte_ids and tokenizer.id_of("The") not in tokenizer.byte_ids
    text = tokenizer.encode_text("The cat")
    assembler = TextAssembler(tokenizer)
    first, _ = assembler.feed(text + [byte_18])
    assert first == "The cat"
    rest = tokenizer.encode_text(" sat")
    second, _ = assembler.feed([byte_8f] + rest)
    tail, _ = assembler.finish()
    whole = tokenizer.decode(text + [byte_18, byte_8f] + rest)
    assert first + second + tail == assembler.content == whole and whole.endswith(" sat")
