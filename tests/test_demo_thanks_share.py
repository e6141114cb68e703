"""The composed data behind the trainer's `--thanks-share` (the option itself: test_demo_share_options.py): the
share of composed small-talk turns that are thanks, the other kinds keeping their ratios; 0 leaves the composed
data exactly as it was (a resumed run's stream must not change)."""

from __future__ import annotations

import collections
import random

import pytest

from scripts.demo import chat_compose


def drawn_intents(n: int, thanks_share: float, seed: int = 0) -> collections.Counter:
    rng = random.Random(seed)
    return collections.Counter(chat_compose.example(rng, "train", "llada2_moe", False, thanks_share).subtask
                               for _ in range(n))


def test_no_share_draws_the_composed_data_exactly_as_before():
    rng_a, rng_b = random.Random(3), random.Random(3)
    before = [chat_compose.example(rng_a, "train", "llada2_moe") for _ in range(200)]
    after = [chat_compose.example(rng_b, "train", "llada2_moe", False, 0.0) for _ in range(200)]
    assert before == after
    assert chat_compose.intent_weights(0.0) == chat_compose.TRAIN_WEIGHTS


def test_a_share_draws_that_many_thanks_and_keeps_the_other_kinds_ratios():
    weights = chat_compose.intent_weights(0.45)
    assert weights["thanks"] == 0.45 and sum(weights.values()) == pytest.approx(1.0)
    assert weights["out_of_scope"] / weights["greeting"] == pytest.approx(
        chat_compose.TRAIN_WEIGHTS["out_of_scope"] / chat_compose.TRAIN_WEIGHTS["greeting"])
    counts = drawn_intents(4000, 0.45)
    assert 0.42 < counts["thanks"] / 4000 < 0.48
    assert 0.25 < drawn_intents(4000, 0.0)["thanks"] / 4000 < 0.31
