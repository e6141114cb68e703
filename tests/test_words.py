"""One way to say counts and engine names, in the app, the CLI and the exports."""

from tui.words import block_position, count, human, per_block, short_model_name


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


def test_long_model_ids_are_shortened_for_the_status_bar():
    assert short_model_name("dg_text") == "dg_text"
    assert short_model_name("inclusionAI/LLaDA2.0-mini") == "inclusionAI/LLaDA2.0-mini"   # short: as it is
    # A path (what mlx-vlm reports): its folder name, and that too long: its middle goes.
    assert short_model_name("/Users/me/.cache/models/diffusiongemma-26B-A4B-it-4bit") == "diffusiongemma…B-A4B-it-4bit"
    assert short_model_name("mlx-community/diffusiongemma-26B-A4B-it") == "diffusiongemma-26B-A4B-it"
    assert short_model_name("/h/hub/models--mlx-community--diffusiongemma-4bit/snapshots/0123abc") == \
        "diffusiongemma-4bit"
    assert all(len(short_model_name(name)) <= 28 for name in ("x" * 80, "/a/" + "y" * 60, "o/" + "z" * 40))
