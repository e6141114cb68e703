"""The app against a server, driven with Textual's Pilot: `diffusion-chat serve` (the canvas animates, the
transcript equals a local run) and recorded streams of other servers (committed blocks only, their errors)."""

from __future__ import annotations

import pytest
from textual.widgets import Input, OptionList

import engine
from engine.settings import Settings
from tui.app import AppOptions, DiffusionChatApp
from tui.screens.model_picker import ModelPickerScreen
from tui.widgets.canvas import DenoisingCanvas
from tui.widgets.messages import AssistantMessage
from tui.widgets.sampler_panel import SamplerPanel

from serve_helpers import CHECKPOINTS, replaying, serving
from tui_helpers import app_env, send, wait_for, wait_for_answer, wait_for_model, wait_for_screen  # noqa: F401  (app_env: fixture)

SIZE = (110, 40)
SETTINGS = dict(max_tokens=40, max_denoising_steps=24, seed=4)


def remote_app(url: str, model: str | None = None, **settings) -> DiffusionChatApp:
    return DiffusionChatApp(AppOptions(server=url, model=model, settings=Settings(**settings)))


@pytest.fixture
def shown(monkeypatch):
    """What the canvas was asked to show: frames (block, step) and notes."""
    record = {"frames": [], "notes": []}
    original_show, original_note = DenoisingCanvas.show, DenoisingCanvas.show_note

    def show(self, step, *args):
        record["frames"].append((step.block, step.step))
        return original_show(self, step, *args)

    def show_note(self, text):
        record["notes"].append(text)
        return original_note(self, text)

    monkeypatch.setattr(DenoisingCanvas, "show", show)
    monkeypatch.setattr(DenoisingCanvas, "show_note", show_note)
    return record


async def test_against_serve_the_canvas_animates_and_the_transcript_equals_a_local_run(app_env, shown):
    local = list(engine.generate(engine.load(CHECKPOINTS / "dg_text"), messages=[{"role": "user", "content": "hi"}],
                                 settings=Settings(**SETTINGS)))[-1]
    with serving("dg_text") as server:
        app = remote_app(server.url, **SETTINGS)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for_model(pilot)
            assert app.model_info.remote and app.model_info.frames
            assert "dg_text │ DiffusionGemma (remote)" in app.chat.status_bar.text
            await send(pilot, "hi")
            await wait_for_answer(pilot)
            answer = app.chat.query(AssistantMessage).last()
            assert answer.content == local.content
            conversation = app.store.get(app.session.conversation_id)
            assert conversation.messages[-1].content == local.content
            assert "blocks" in app.chat.status_bar.text and "steps" in app.chat.status_bar.text
    # Both blocks animated, in order (the app draws as many frames as its CPU budget allows).
    blocks = [block for block, _ in shown["frames"]]
    assert set(blocks) == {0, 1} and blocks == sorted(blocks) and shown["notes"] == []
    assert app.config.model is None  # a server is not saved as the model to load next time


async def test_against_another_server_committed_blocks_only_with_its_reasoning(app_env, shown):
    with replaying(owner="vllm") as (url, _):
        app = remote_app(url, "vllm_dg")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for_model(pilot)
            # The sampler panel offers what vLLM takes (of DiffusionGemma's settings: temperature, seed, max tokens).
            offered = {w.id.removeprefix("setting-") for w in app.chat.query_one(SamplerPanel).query("Input, Switch, Select")
                       if (w.id or "").startswith("setting-")}
            assert offered == {"temp", "seed", "max_tokens"}
            await send(pilot, "why blue?")
            await wait_for_answer(pilot)
            answer = app.chat.query(AssistantMessage).last()
            assert answer.content == "Rayleigh scattering: shorter wavelengths scatter more, so the sky is blue."
            assert answer.reasoning == "The user asks about colour; Rayleigh scattering."
            assert "2 blocks" in app.chat.status_bar.text and "steps" not in app.chat.status_bar.text
    assert shown["frames"] == [] and shown["notes"] == ["remote: committed blocks only"]


async def test_a_server_error_is_one_line_and_a_dropped_server_keeps_the_committed_part(app_env):
    with replaying() as (url, _):
        app = remote_app(url, "refuse_mlx_vlm")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for_model(pilot)
            await send(pilot, "json please")
            await wait_for_answer(pilot)
            note = str(app.chat.query(AssistantMessage).last().query_one("#note").render())
            assert note == "⚠ HTTP 400: Structured outputs are not supported for diffusion models"
            app.connect(url, model="dropped")
            await wait_for(pilot, lambda: app.chat.shown_model is not None and app.chat.shown_model.name == "dropped", "reconnect")
            await send(pilot, "tell me")
            await wait_for_answer(pilot)
            saved = app.store.get(app.session.conversation_id).messages[-1]
            assert (saved.content, saved.status) == ("Saved before the server died. ", "error")
            assert app.is_running and app.session.generation is None


async def test_escape_closes_the_stream_and_keeps_the_committed_block(app_env):
    with replaying() as (url, _):
        app = remote_app(url, "slow")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for_model(pilot)
            await send(pilot, "wait")
            answer = app.chat.query(AssistantMessage).last()
            await wait_for(pilot, lambda: answer.content, "the first block")
            await pilot.press("escape")
            await wait_for_answer(pilot)
            assert answer.status == "cancelled" and answer.content == "A first block, then a long wait. "


async def test_the_model_picker_connects_to_a_server(app_env):
    with serving("dg_text") as server:
        app = DiffusionChatApp(AppOptions(settings=Settings(**SETTINGS)))
        async with app.run_test(size=SIZE) as pilot:
            picker = await _picker(pilot)
            options = picker.query_one(OptionList)
            index = next(i for i, choice in enumerate(picker.choices) if choice.title == "Connect to a server…")
            options.highlighted = index
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.screen.query("#dialog-input"), "the server dialog")
            app.screen.query_one("#dialog-input", Input).value = server.url
            await pilot.press("enter")
            await wait_for_model(pilot)
            assert app.model_info.remote and app.model_info.name == "dg_text"
            assert not isinstance(app.screen, ModelPickerScreen)
            await send(pilot, "hi")
            await wait_for_answer(pilot)
            assert app.chat.query(AssistantMessage).last().status == "complete"


async def _picker(pilot) -> ModelPickerScreen:
    return await wait_for_screen(pilot, ModelPickerScreen, "the model picker")
