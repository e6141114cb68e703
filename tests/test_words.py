"""One way to say counts and engine names, in the app, the CLI and the exports."""

from tui.words import block_position, count, human, per_block


def test_singular_and_plural():
    assert count(1, "block") == "1 block" and count(2, "block") == "2 blocks" and count(0, "step") == "0 steps"


def test_a_maximum_is_marked_and_a_real_count_is_not():
    assert block_position(0, 16, at_most=True) == "block 1 of ≤16"
    assert block_position(2, 6, at_most=False) == "block 3 of 6"
    assert block_position(4, None, at_most=True) == "block 5"


def test_engine_names_read_as_words():
    assert human("stable_and_confident") == "stable and confident" and human("stop") == "stop"


def test_per_block_numbers_are_readable():
    assert per_block([[32, 32], [16, 8, 8]]) == "b1 32 32 · b2 16 8 8"
