"""The settings file: defaults, round trips, and never losing a hand-edited file that has a mistake."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.settings import Settings
from themes import DEFAULT_THEME, THEME_NAMES
from tui import config as config_module
from tui.config import AppConfig, ConfigError, default_config_path, load_config, save_config


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "settings" / "config.toml"


def test_defaults_when_the_file_is_missing(path: Path):
    result = load_config(path)
    assert result.error is None and result.path == path
    assert result.config == AppConfig()
    assert result.config.theme == DEFAULT_THEME in THEME_NAMES
    assert (result.config.model, result.config.canvas_mode, result.config.think) == (None, "candidates", False)
    assert result.config.sampler_for("diffusion_gemma") == Settings()
    # Answers record their denoising by default, 16 MiB of recordings per conversation.
    assert result.config.record_trajectories is True and result.config.trajectory_cap_bytes == 16 * 2**20
    assert not path.parent.exists()  # loading never creates anything


def test_default_path_honours_the_environment_variable(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("DIFFUSION_CHAT_CONFIG_DIR", str(tmp_path / "conf"))
    assert default_config_path() == tmp_path / "conf" / "config.toml"
    config = AppConfig(model="some/model")
    assert save_config(config) == tmp_path / "conf" / "config.toml"
    assert load_config().config == config
    monkeypatch.delenv("DIFFUSION_CHAT_CONFIG_DIR")
    assert default_config_path().name == "config.toml"
    assert default_config_path().parent.name == "diffusion-chat"


def test_round_trip(path: Path):
    config = AppConfig(model="/models/llada2-mini", theme="diffusion-high-contrast", canvas_mode="noise", think=True,
                       record_trajectories=False, trajectory_cap_mb=2.5)
    config = config.with_sampler("llada2_moe", Settings(block_length=32, temp=1, top_p=0.9, seed=3))
    config = config.with_sampler("diffusion_gemma", Settings(diffusion_sampler="entropy-bound", entropy_bound=0.5))
    save_config(config, path)
    loaded = load_config(path)
    assert loaded.error is None
    assert loaded.config == config
    text = path.read_text()
    assert "temp = 1.0" in text  # float settings are written as floats
    assert "record_trajectories = false" in text and "trajectory_cap_mb = 2.5" in text
    assert loaded.config.trajectory_cap_bytes == int(2.5 * 2**20)
    assert "[samplers.llada2_moe]" in text and "[samplers.diffusion_gemma]" in text
    assert loaded.config.sampler_for("llada2_moe") == Settings(block_length=32, temp=1.0, top_p=0.9, seed=3)


def test_with_sampler_keeps_only_the_values_that_are_set():
    config = AppConfig(think=True).with_sampler("diffusion_gemma", Settings(max_tokens=128))
    assert config.samplers == {"diffusion_gemma": {"max_tokens": 128}}
    assert config.with_sampler("diffusion_gemma", Settings()).samplers == {}  # all unset: nothing stored
    # A value equal to the checkpoint's default is still a choice the person made: it is kept.
    assert AppConfig().with_sampler("llada2_moe", Settings(seed=0, diffusion_full_canvas=False)).samplers == {
        "llada2_moe": {"seed": 0, "diffusion_full_canvas": False}}
    with pytest.raises(ConfigError, match="unknown model family"):
        AppConfig().with_sampler("gpt2", Settings())


def test_partial_file_fills_in_defaults(path: Path):
    path.parent.mkdir(parents=True)
    path.write_text('theme = "diffusion-light"\n')
    result = load_config(path)
    assert result.error is None
    assert result.config == AppConfig(theme="diffusion-light")


BROKEN_FILES = {
    "bad toml": ('theme = "unterminated\n', "invalid TOML"),
    "unknown key": ('colour = "red"\n', "unknown key"),
    "wrong type": ("think = 1\n", "think must be true or false"),
    "empty model": ('model = ""\n', "model must be"),
    "canvas mode": ('canvas_mode = "sparkles"\n', "canvas_mode must be one of"),
    "samplers not tables": ("samplers = 3\n", "samplers must be"),
    "unknown family": ("[samplers.gpt2]\ntemp = 1.0\n", "unknown model family"),
    "unknown setting": ("[samplers.llada2_moe]\nwarmth = 1.0\n", "unknown setting 'warmth'"),
    "string for number": ('[samplers.llada2_moe]\ntemp = "hot"\n', "temp must be a number"),
    "bool for int": ("[samplers.llada2_moe]\nseed = true\n", "seed must be an integer"),
    "float for int": ("[samplers.llada2_moe]\nblock_length = 3.5\n", "block_length must be an integer"),
    "out of range": ("[samplers.llada2_moe]\ntop_p = 1.5\n", "top_p must be in (0, 1]"),
    "bad sampler name": ('[samplers.diffusion_gemma]\ndiffusion_sampler = "greedy"\n', "unknown sampler"),
    "think in sampler": ("[samplers.diffusion_gemma]\nthink = true\n", "top-level think"),
    "recording not a bool": ('record_trajectories = "yes"\n', "record_trajectories must be true or false"),
    "negative cap": ("trajectory_cap_mb = -1\n", "trajectory_cap_mb must be a number of MiB"),
    "cap not a number": ('trajectory_cap_mb = "big"\n', "trajectory_cap_mb must be a number of MiB"),
    "infinite cap": ("trajectory_cap_mb = inf\n", "trajectory_cap_mb must be a number of MiB"),
}


@pytest.mark.parametrize("content, message", BROKEN_FILES.values(), ids=BROKEN_FILES.keys())
def test_invalid_file_is_reported_and_left_untouched(path: Path, content: str, message: str):
    path.parent.mkdir(parents=True)
    path.write_text(content)
    result = load_config(path)
    assert result.config == AppConfig()
    assert result.error is not None and message in result.error
    assert str(path) in result.error and "\n" not in result.error
    assert path.read_text() == content

    with pytest.raises(ConfigError, match="not overwriting"):
        save_config(AppConfig(theme="diffusion-light"), path)
    assert path.read_text() == content

    save_config(AppConfig(theme="diffusion-light"), path, force=True)
    assert load_config(path).config == AppConfig(theme="diffusion-light")


def test_unreadable_file_is_reported(path: Path):
    path.parent.mkdir(parents=True)
    path.write_bytes(b"theme = \"\xff\xfe\"\n")
    result = load_config(path)
    assert result.error is not None and "cannot read" in result.error
    assert result.config == AppConfig()


def test_saving_an_invalid_config_is_refused(path: Path):
    with pytest.raises(ConfigError, match="canvas_mode"):
        save_config(AppConfig(canvas_mode="sparkles"), path)
    with pytest.raises(ConfigError, match="top_p"):
        save_config(AppConfig(samplers={"llada2_moe": {"top_p": 2.0}}), path)
    assert not path.exists()


def test_save_is_atomic(path: Path, monkeypatch):
    save_config(AppConfig(theme="diffusion-light"), path)
    before = path.read_bytes()

    def crash(source, destination):
        raise OSError("disk unplugged")

    monkeypatch.setattr(config_module.os, "replace", crash)
    with pytest.raises(ConfigError, match="disk unplugged"):
        save_config(AppConfig(theme="diffusion-dark", model="other"), path)
    assert path.read_bytes() == before  # the old file is whole
    assert os.listdir(path.parent) == ["config.toml"]  # and the half-written temporary is gone

    monkeypatch.undo()
    save_config(AppConfig(theme="diffusion-dark", model="other"), path)
    assert load_config(path).config == AppConfig(model="other")
    assert os.listdir(path.parent) == ["config.toml"]


def test_save_replaces_a_valid_file_and_creates_folders(tmp_path: Path):
    path = tmp_path / "a" / "b" / "config.toml"
    save_config(AppConfig(model="first"), path)
    save_config(AppConfig(model="second"), path)
    assert load_config(path).config.model == "second"
