"""Helpers for the app tests (tests/test_tui_*.py): isolated folders, waiting, sending a prompt."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine.settings import Settings
from tui.app import AppOptions, DiffusionChatApp

CHECKPOINTS = Path(__file__).parent / "fixtures" / "checkpoints"
IMAGES = Path(__file__).parent / "fixtures" / "golden" / "dg_vision"
TIMEOUT_S = 30
# Small enough that a whole answer takes well under a second on the tiny checkpoints.
QUICK = dict(max_tokens=48, max_denoising_steps=6)


@pytest.fixture
def app_env(tmp_path, monkeypatch):
    """Point the conversation database, the settings file and the HF cache at `tmp_path`."""
    import huggingface_hub.constants

    monkeypatch.setenv("DIFFUSION_CHAT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DIFFUSION_CHAT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "hf-cache").mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def make_app(checkpoint: str | None = "dg_text", think: bool = False, make_worker=None, **settings) -> DiffusionChatApp:
    model = str(CHECKPOINTS / checkpoint) if checkpoint else None
    options = AppOptions(model=model, settings=Settings(**{**QUICK, **settings}), think=think)
    return DiffusionChatApp(options, make_worker=make_worker)


async def wait_for(pilot, condition, what: str, timeout: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.01)


async def wait_for_model(pilot) -> None:
    # The screen's own state (its panel rebuilt for the model), not just the app having heard of it.
    await wait_for(pilot, lambda: pilot.app.model_info is not None and pilot.app.chat.shown_model is pilot.app.model_info,
                   "the model to load")


async def send(pilot, text: str) -> None:
    """Type `text` into the prompt and press Enter; returns once the answer has started (or already ended)."""
    from tui.widgets.messages import AssistantMessage

    chat, session = pilot.app.chat, pilot.app.session
    answers = len(chat.query(AssistantMessage))

    def started() -> bool:
        # The new answer's widget is mounted before its generation is registered: wait for the generation
        # (or, for a very quick one, its end), not just for the widget.
        shown = chat.query(AssistantMessage)
        return len(shown) > answers and (session.generation is not None or shown.last().finished)

    chat.prompt.focus()
    chat.prompt.value = text
    await pilot.press("enter")
    await wait_for(pilot, started, "the answer to start")


async def wait_for_answer(pilot) -> None:
    """Until the newest answer has finished (its own state, not the absence of a generation)."""
    from tui.widgets.messages import AssistantMessage

    chat = pilot.app.chat
    await wait_for(pilot, lambda: chat.query(AssistantMessage).last().finished, "the answer to finish")
    await pilot.pause()


def notices(app) -> list[str]:
    return [str(n.message) for n in app._notifications]
