"""A fill's given text is the answer's text byte for byte, whatever script it is in and whatever the model
writes next to it: a hole filled with a stray byte token once turned a neighbouring given 日本 into U+FFFD
(a byte-fallback decoder reads an invalid run of byte tokens as one U+FFFD per byte). Property-tested over
random scripts and emoji on the DiffusionGemma test checkpoint, plus the one-line refusals of `--fill`."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine.generation.fill import MAX_HOLE_LENGTH
from tui.cli import main

from conftest import CHECKPOINTS

MODEL = engine.load(CHECKPOINTS / "dg_text")
# Scripts whose characters are several UTF-8 bytes, and emoji (4 bytes, some with joiners and modifiers).
SCRIPTS = [(0x3040, 0x30FF), (0x4E00, 0x4FFF), (0x0400, 0x04FF), (0x0600, 0x06FF), (0x0900, 0x097F),
           (0xAC00, 0xAD00), (0x1F300, 0x1F5FF), (0x1F900, 0x1F9FF), (0x00C0, 0x00FF), (0x0020, 0x007E)]
EXTRAS = ["🎉", "👩‍💻", "👍🏽", "🇯🇵", "é", "ß", "\u200d", " "]
pieces = st.one_of(*[st.text(st.characters(min_codepoint=a, max_codepoint=b), min_size=1, max_size=4)
                     for a, b in SCRIPTS], st.sampled_from(EXTRAS))
given_text = st.lists(pieces, min_size=1, max_size=3).map("".join).filter(
    lambda t: "___" not in t and "[...]" not in t and "[…]" not in t and "\\" not in t and t.strip())


def fill(template: str, seed: int):
    events = list(engine.generate(MODEL, messages=[{"role": "user", "content": "x"}], fill=template,
                                  settings=engine.Settings(seed=seed, max_denoising_steps=3)))
    return events[-1]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(given_text, min_size=2, max_size=3), lengths=st.lists(st.integers(1, 3), min_size=2,
                                                                               max_size=3), seed=st.integers(0, 99))
def test_given_text_is_kept_byte_exact_next_to_any_filling(texts, lengths, seed):
    holes = [f"___{{{n}}}" if i % 2 else f"[…]{{{n}}}" for i, n in enumerate(lengths[:len(texts) - 1])]
    template = texts[0] + "".join(hole + text for hole, text in zip(holes, texts[1:]))
    finished = fill(template, seed)
    content, spans = finished.content, finished.filled_spans
    assert len(spans) == len(holes)
    edges = [0] + [edge for span in spans for edge in span] + [len(content)]
    kept = [content[edges[i]:edges[i + 1]] for i in range(0, len(edges), 2)]
    assert [k.encode() for k in kept] == [t.encode() for t in texts], (template, content, spans)


def test_the_reported_template_keeps_its_given_text_on_40_seeds():
    for seed in range(40):
        finished = fill("日本___{2}語 🎉[…]{2}", seed)
        (a, b), (c, d) = finished.filled_spans
        content = finished.content
        assert (content[:a], content[b:c], content[d:]) == ("日本", "語 🎉", ""), (seed, content)


@pytest.mark.parametrize("template, words", [
    ("a ___{" + "7" * 5000 + "} b", "longer than any block"),
    (f"a ___{{{MAX_HOLE_LENGTH + 1}}} b", "longer than any block"),
    ("a ___{300} b", "longer than one block"),      # within the syntax's bound, past this model's block
    ("x ___{1}" * 10_001, "more than 10000 holes"),
])
def test_generate_refuses_impossible_holes_in_one_line(capsys, template, words):
    code = main(["generate", "--model", str(CHECKPOINTS / "dg_text"), "--fill", template])
    err = capsys.readouterr().err.strip()
    assert code != 0 and words in err and len(err.splitlines()) == 1 and "unexpected" not in err, err


def test_a_fill_of_many_holes_reports_every_span(capsys):
    template = "".join(f"w{i} ___{{1}} " for i in range(300))
    assert main(["generate", "--model", str(CHECKPOINTS / "dg_text"), "--fill", template,
                 "--max-denoising-steps", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    spans, content = result["filled_spans"], result["content"]
    assert len(spans) == 300 and all(a <= b for a, b in spans)
    assert content[:spans[0][0]] == "w0 " and all(content[spans[i][1]:spans[i + 1][0]] == f" w{i + 1} "
                                                   for i in range(299))
