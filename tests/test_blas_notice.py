"""Linux without OpenBLAS: the app and `generate --profile` say once that steps run ~10x slower, and the fix."""

from __future__ import annotations

import pytest

from engine.cpu import blas as _blas
from tui.cli import main

from conftest import CHECKPOINTS
from tui_helpers import app_env, make_app, notices, wait_for, wait_for_model  # noqa: F401  (app_env: a fixture)

DG = str(CHECKPOINTS / "dg_text")


@pytest.fixture
def no_openblas(monkeypatch):
    # The notice is about MLX's CPU backend: it reaches the UI as ModelInfo.notices, from the engine thread.
    monkeypatch.setattr(_blas.sys, "platform", "linux")
    monkeypatch.setattr(_blas, "openblas_mapped", lambda: None)


def test_the_notice_names_the_slowdown_and_the_fix(no_openblas):
    notice = _blas.slow_blas_notice()
    assert notice == _blas.SLOW_BLAS_NOTICE
    assert "10× slower" in notice and "apt install libopenblas0-pthread" in notice and "\n" not in notice


def test_no_notice_when_openblas_is_mapped_or_off_linux(monkeypatch):
    monkeypatch.setattr(_blas, "openblas_mapped", lambda: "/usr/lib/x86_64-linux-gnu/libopenblas.so.0")
    assert _blas.slow_blas_notice() is None
    monkeypatch.setattr(_blas, "openblas_mapped", lambda: None)
    monkeypatch.setattr(_blas.sys, "platform", "darwin")
    assert _blas.slow_blas_notice() is None


def profile_stderr(capsys) -> str:
    code = main(["generate", "--model", DG, "--prompt", "hi", "--max-tokens", "8", "--max-denoising-steps", "2",
                 "--profile"])
    assert code == 0
    return capsys.readouterr().err


def test_generate_profile_prints_the_notice_once(capsys, no_openblas):
    err = profile_stderr(capsys)
    assert err.count(_blas.SLOW_BLAS_NOTICE) == 1
    assert f"{_blas.SLOW_BLAS_NOTICE}\n" in err  # a line of its own
    assert "ms/step" in err


def test_generate_profile_is_quiet_with_openblas(capsys, monkeypatch):
    monkeypatch.setattr(_blas, "openblas_mapped", lambda: "/usr/lib/libopenblas.so.0")
    assert _blas.SLOW_BLAS_NOTICE not in profile_stderr(capsys)


async def test_the_app_shows_the_notice_once_at_model_load(app_env, no_openblas):
    app = make_app("dg_text")
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for_model(pilot)
        await wait_for(pilot, lambda: _blas.SLOW_BLAS_NOTICE in notices(app), "the slow-BLAS notice")
        first = app.model_info
        app.load_model(DG)  # the same checkpoint again: a second ModelLoaded
        await wait_for(pilot, lambda: app.model_info is not first and app.chat.shown_model is app.model_info,
                       "the model to load again")
        assert notices(app).count(_blas.SLOW_BLAS_NOTICE) == 1


async def test_the_app_says_nothing_with_openblas(app_env, monkeypatch):
    monkeypatch.setattr(_blas, "openblas_mapped", lambda: "/usr/lib/libopenblas.so.0")
    app = make_app("dg_text")
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for_model(pilot)
        assert _blas.SLOW_BLAS_NOTICE not in notices(app)
