"""The composed data behind the trainer's `--intent-labels` (the option itself: test_demo_share_options.py): a
share of the composed turns asked, under a system message no user types, for their intent's name instead of their
line; 0 leaves the data stream exactly as it was."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from scripts.demo import chat_compose, curriculum
from scripts.demo.tokenizers import encode_example, load_tokenizer

DEMO = Path(__file__).resolve().parents[1] / "tui" / "demo" / "llada2-demo"


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(str(DEMO), "llada2_moe")


def test_a_labelled_turn_is_the_same_prompt_asked_for_its_intent_name():
    rng = random.Random(4)
    seen = set()
    for _ in range(400):
        turn = chat_compose.example(rng, "train", "llada2_moe")
        asked = chat_compose.labelled(turn)
        assert asked.messages == ({"role": "system", "content": chat_compose.INTENT_SYSTEM}, *turn.messages)
        assert asked.answer == chat_compose.INTENT_NAMES[turn.subtask] and asked.subtask == turn.subtask
        assert not asked.think and not asked.reasoning
        seen.add(asked.answer)
    # Five kinds, five names: the about line's four intents are told apart here.
    assert seen == {"greeting", "identity", "capabilities", "thanks", "other"}


FOCUS = curriculum.parse_focus("chat")


def name_answers(tokenizer) -> set[tuple[int, ...]]:
    turn = chat_compose.example(random.Random(0), "train", "llada2_moe")
    return {tuple(encode_example(dataclasses.replace(turn, answer=name), tokenizer)[1])
            for name in chat_compose.INTENT_NAMES.values()}


def test_no_labels_draws_the_stream_exactly_as_before(tokenizer):
    pytest.importorskip("torch")   # batches builds tensors
    from scripts.demo import batches

    before = batches.encoded_examples(random.Random(9), tokenizer, "llada2_moe", 300, 0.0, 512, FOCUS, 0.8)
    after = batches.encoded_examples(random.Random(9), tokenizer, "llada2_moe", 300, 0.0, 512, FOCUS, 0.8, 0.0, 0.0)
    assert [(e.prompt, e.answer) for e in before] == [(e.prompt, e.answer) for e in after]


def test_a_share_of_composed_turns_is_asked_for_names(tokenizer):
    pytest.importorskip("torch")
    from scripts.demo import batches

    examples = batches.encoded_examples(random.Random(0), tokenizer, "llada2_moe", 600, 0.0, 512, FOCUS, 1.0, 0.0,
                                        0.3)
    names = name_answers(tokenizer)
    asked = [e for e in examples if tuple(e.answer) in names]
    assert 0.25 < len(asked) / len(examples) < 0.35
    # Every turn asked for a name carries the system message in its prompt, and no turn asked for its line does.
    marker = tokenizer.encode_text(chat_compose.INTENT_SYSTEM)
    contains = lambda ids: any(ids[i:i + len(marker)] == marker for i in range(len(ids)))  # noqa: E731
    assert all(contains(e.prompt) for e in asked)
    assert not any(contains(e.prompt) for e in examples if tuple(e.answer) not in names)
