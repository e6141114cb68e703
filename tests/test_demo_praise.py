"""scripts/demo/chat_praise.py: thanks without a thanks word, built from parts, and the remarks in its words that
are not thanks, both drawn into the composed training turns."""

from __future__ import annotations

import random
import re

from scripts.demo import chat_compose, chat_out_of_scope, chat_praise
from scripts.demo.tasks_chat import chat_answer

THANKS_WORD = re.compile(r"thank|thx|\bty\b|cheers|appreciat|grateful|\bta\b")


def test_built_praise_says_no_thanks_word_and_takes_every_shape():
    rng = random.Random(3)
    built = [chat_praise.praise(rng) for _ in range(3000)]
    assert not [b for b in built if THANKS_WORD.search(b)]
    assert len(set(built)) > 2000   # a grammar, not a list
    assert any(b.startswith(("you're", "ur ", "u r ")) for b in built)          # praise of the bot
    assert any(re.match(r"(what a |such a )?(good|great|nice) bot\b", b) for b in built)
    assert any(b.startswith(("phew", "omg", "finally")) and "work" in b for b in built)   # relief
    assert any(". " in b or " - " in b for b in built)                             # two of them


def test_composed_thanks_carry_built_praise_and_out_of_scope_carries_remarks_in_the_same_words():
    rng = random.Random(11)
    examples = [chat_compose.example(rng, "train", "llada2_moe") for _ in range(6000)]
    thanks = [e.messages[0]["content"].lower() for e in examples if e.subtask == "thanks"]
    wordless = [t for t in thanks if not THANKS_WORD.search(t)]
    assert len(wordless) > 0.2 * len(thanks)
    remarks = {p for kind, p in chat_compose.out_of_scope_patterns("train") if kind == "remarks"}
    assert len(remarks) >= 8
    about = chat_answer("identity", "llada2_moe")
    other = [e for e in examples if e.subtask == "out_of_scope"]
    assert all(e.answer == about for e in other)
    remarked = [e.messages[0]["content"].lower() for e in other if e.template in remarks]
    assert len(remarked) > 50
    # The interjections and shapes praise opens with also open remarks: they cannot decide thanks alone.
    rng = random.Random(12)
    filled = [chat_out_of_scope.fill(rng, rng.choice(sorted(remarks))) for _ in range(3000)]
    for opener in ("omg", "phew", "finally"):
        said = re.compile(rf"\b{opener}\b")
        assert any(said.search(t) for t in wordless) and any(said.search(r) for r in filled), opener
    assert any("you're" in r for r in filled) and any("work" in r for r in filled)


def test_every_remark_pattern_fills_from_the_pools():
    rng = random.Random(5)
    for pattern in chat_praise.REMARK_PATTERNS:
        for _ in range(20):
            text = chat_out_of_scope.fill(rng, pattern)
            assert "{" not in text and text.strip()
