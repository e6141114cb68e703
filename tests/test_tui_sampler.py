"""The sampler panel's fields come from the settings schema; typed text is parsed by it (no app needed)."""

from __future__ import annotations

import pytest

from engine.errors import SettingsError
from engine.settings import SPECS, Settings, parse_text, specs_for
from tui.widgets.sampler_panel import reset_to_checkpoint_defaults


def test_every_field_is_an_engine_setting_and_the_families_show_their_own():
    shown = {family: set(specs_for(family)) for family in ("diffusion_gemma", "llada2_moe")}
    assert shown["diffusion_gemma"] | shown["llada2_moe"] == set(SPECS)
    assert {"diffusion_sampler", "entropy_bound", "diffusion_full_canvas"} <= shown["diffusion_gemma"]
    assert {"block_length", "diffusion_threshold_end", "top_k", "top_p"} <= shown["llada2_moe"]
    assert not {"block_length", "top_k"} & shown["diffusion_gemma"]


def test_typed_values_are_parsed_and_empty_means_the_default():
    assert parse_text("max_denoising_steps", " 12 ") == 12
    assert parse_text("temp", "0.5") == 0.5
    assert parse_text("max_denoising_steps", "") is None
    assert parse_text("seed", "") is None is Settings().seed
    for name, text in (("max_denoising_steps", "3.5"), ("temp", "warm"), ("temp", "nan"), ("entropy_bound", "inf")):
        with pytest.raises(SettingsError, match="must be a"):
            parse_text(name, text)


def test_typed_switches_read_true_and_false_words():
    # A typed "true" was refused as "must be true or false, got 'true'" (bench/eval_demo.py --setting).
    assert parse_text("token_editing", "true") is True
    assert parse_text("token_editing", " Off ") is False
    assert parse_text("token_editing", "") is None
    with pytest.raises(SettingsError, match="must be true or false, got 'maybe'"):
        parse_text("token_editing", "maybe")


def test_reset_touches_only_the_fields_of_that_family():
    settings = Settings(max_denoising_steps=3, block_length=8, diffusion_sampler="confidence-threshold", seed=7)
    reset = reset_to_checkpoint_defaults(settings, "llada2_moe")
    assert (reset.max_denoising_steps, reset.block_length, reset.seed) == (None, None, None)
    assert reset.diffusion_sampler == "confidence-threshold"
