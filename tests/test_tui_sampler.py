"""The sampler panel's field table and parsing (no app needed)."""

from __future__ import annotations

import dataclasses

import pytest

from engine.errors import SettingsError
from engine.settings import Settings
from tui.widgets.sampler_panel import FIELDS_BY_FAMILY, parse_value, reset_to_checkpoint_defaults


def field(family: str, name: str):
    return next(f for f in FIELDS_BY_FAMILY[family] if f.name == name)


def test_every_field_is_an_engine_setting_and_the_families_show_their_own():
    names = {f.name for f in dataclasses.fields(Settings)}
    for fields in FIELDS_BY_FAMILY.values():
        assert {f.name for f in fields} <= names
    shown = {family: {f.name for f in fields} for family, fields in FIELDS_BY_FAMILY.items()}
    assert {"diffusion_sampler", "entropy_bound", "diffusion_full_canvas"} <= shown["diffusion_gemma"]
    assert {"block_length", "diffusion_threshold_end", "top_k", "top_p"} <= shown["llada2_moe"]


def test_typed_values_are_parsed_and_empty_means_the_default():
    assert parse_value(field("diffusion_gemma", "max_denoising_steps"), " 12 ") == 12
    assert parse_value(field("diffusion_gemma", "temp"), "0.5") == 0.5
    assert parse_value(field("diffusion_gemma", "max_denoising_steps"), "") is None
    assert parse_value(field("diffusion_gemma", "seed"), "") == Settings().seed == 0
    for name, text in (("max_denoising_steps", "3.5"), ("temp", "warm"), ("temp", "nan"), ("entropy_bound", "inf")):
        with pytest.raises(SettingsError, match="must be a"):
            parse_value(field("diffusion_gemma", name), text)


def test_reset_touches_only_the_fields_of_that_family():
    settings = Settings(max_denoising_steps=3, block_length=8, diffusion_sampler="confidence-threshold", seed=7)
    reset = reset_to_checkpoint_defaults(settings, "llada2_moe")
    assert (reset.max_denoising_steps, reset.block_length, reset.seed) == (None, None, 0)
    assert reset.diffusion_sampler == "confidence-threshold"
