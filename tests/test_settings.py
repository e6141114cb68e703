"""The settings schema: one place for flags, validation, panel fields and file checks; given beats saved."""

from __future__ import annotations

import pytest

from engine.errors import SettingsError
from engine.settings import SPECS, Settings, coerce, flag
from tui.app import AppOptions, DiffusionChatApp
from engine.cli.common import settings_from_args
from tui.cli import app_parser, main
from engine.cli.generate import generate_parser
from tui.config import AppConfig, save_config

from conftest import CHECKPOINTS
from tui_helpers import app_env  # noqa: F401  (fixture)


def test_every_setting_has_a_flag_a_label_and_help():
    help_text = generate_parser().format_help()
    for name, spec in SPECS.items():
        assert flag(name) in help_text
        assert spec.label and spec.help and spec.families
    assert "--no-diffusion-full-canvas" in help_text


def test_flags_not_given_are_absent_not_defaults():
    assert settings_from_args(app_parser().parse_args([])) == Settings()
    given = settings_from_args(app_parser().parse_args(["--seed", "0", "--no-diffusion-full-canvas"]))
    assert given.to_dict() == {"seed": 0, "diffusion_full_canvas": False}


def test_command_line_values_override_saved_ones_even_when_they_equal_the_default(app_env, tmp_path):
    save_config(AppConfig(samplers={"diffusion_gemma": {"seed": 5, "diffusion_full_canvas": True, "temp": 0.5}}),
                tmp_path / "config" / "config.toml")
    flags = settings_from_args(app_parser().parse_args(["--seed", "0", "--no-diffusion-full-canvas"]))
    app = DiffusionChatApp(AppOptions(settings=flags))
    try:
        used = app.settings_for("diffusion_gemma")
    finally:
        app.store.close()
    assert (used.seed, used.diffusion_full_canvas, used.temp) == (0, False, 0.5)


def test_a_rule_is_one_error_type_that_names_settings_and_only_the_cli_adds_dashes(capsys):
    with pytest.raises(SettingsError) as caught:
        Settings(t_min=0.6, t_max=0.5).validated()
    assert str(caught.value) == "t_max (0.5) must be greater than t_min (0.6)"
    assert caught.value.render(flag) == "--t-max (0.5) must be greater than --t-min (0.6)"
    # The same rule after the checkpoint's defaults fill the gap (its t_max is 0.8): same type, same words.
    code = main(["generate", "--model", str(CHECKPOINTS / "dg_text"), "--prompt", "hi", "--t-min", "0.9"])
    err = capsys.readouterr().err
    assert code == 1 and "--t-max (0.8) must be greater than --t-min (0.9)" in err
    import engine

    model = engine.load(CHECKPOINTS / "dg_text")
    with pytest.raises(SettingsError, match=r"^t_max \(0.8\) must be greater than t_min \(0.9\)$"):
        engine.generate(model, prompt_ids=[2, 3], settings=Settings(t_min=0.9))


@pytest.mark.parametrize("name,value,words", [
    ("max_tokens", 0, "max_tokens must be a positive integer, got 0"),
    ("max_tokens", 2.5, "max_tokens must be an integer, got 2.5"),
    ("seed", True, "seed must be an integer, got True"),
    ("top_p", 1.5, "top_p must be in (0, 1], got 1.5"),
    ("temp", float("nan"), "temp must be a number"),
    ("diffusion_full_canvas", 1, "diffusion_full_canvas must be true or false, got 1"),
    ("diffusion_sampler", "greedy", "unknown sampler 'greedy' for diffusion_sampler"),
])
def test_values_are_checked_by_their_spec(name, value, words):
    with pytest.raises(SettingsError) as caught:
        coerce(name, value)
    assert words in str(caught.value) and "--" not in str(caught.value)


def test_a_brace_in_a_value_is_not_taken_for_a_placeholder():
    with pytest.raises(SettingsError, match=r"unknown sampler '\{0\}'"):
        coerce("diffusion_sampler", "{0}")


def test_thinking_is_a_request_field_not_a_setting():
    assert "think" not in SPECS
    assert "--think" in app_parser().format_help()
