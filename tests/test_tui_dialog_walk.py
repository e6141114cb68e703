"""The bar of issue 24 at 80×24 and 100×30: the replay view clips nothing important, and a walk through every
modal screen and dialog finds each one's controls on the screen and Esc closing it."""

from __future__ import annotations

import pytest
from textual.widgets import Button, DataTable, Input, OptionList

from tui.screens.compare import CompareScreen
from tui.screens.conversations import ConversationsScreen
from tui.screens.dialogs import ConfirmScreen, TextPromptScreen
from tui.screens.help import HelpScreen
from tui.screens.model_picker import ModelPickerScreen
from tui.screens.replay import ReplayScreen

from tui_helpers import (app_env, make_app, open_replay, send, wait_for,  # noqa: F401 (app_env)
                         wait_for_answer, wait_for_model, wait_for_screen)

SIZES = [(80, 24), (100, 30)]


def screen_lines(app) -> list[str]:
    return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]


def inside_screen(widget) -> bool:
    region = widget.region
    return region.width > 0 and region.height > 0 and widget.screen.region.contains_region(region)


# ---- the replay view ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("trajectory", ["dg_fill.traj", "llada21_edits.traj"])
async def test_the_replay_view_clips_nothing_important(app_env, size, trajectory):
    async with open_replay(trajectory, size) as (pilot, replay):
        app = pilot.app
        for _ in range(3):
            await pilot.press("right_square_bracket")   # the last block: its counter is the widest
            await pilot.pause()
        blocks = len(replay.blocks.first_frames)
        for name in ("#replay-title", "#replay-position", "#replay-block", "#replay-steps"):
            assert inside_screen(replay.query_one(name)), name
        lines = screen_lines(app)
        text = "\n".join(lines)
        assert f"block {blocks} of {blocks}" in lines[1] and "steps/s (+/-)" in lines[1] and "←/→ step" in lines[1]
        assert "≤" not in text   # a recording knows its real block count
        # The canvas header and legend wrap instead of losing their ends.
        header = replay.canvas.header_text()
        assert all(phrase in text for phrase in header.split(" · ")), (header, text)
        assert "undecided" in text and ("given fixed" in text) == (replay.trajectory.fill is not None)
        footer = lines[-1]
        for key in ("space Play", "[ Prev block", "] Next block", "m Noise on/off", "esc Close"):
            assert key in footer, (key, footer)
        await pilot.press("escape")
        assert not isinstance(app.screen, ReplayScreen)


# ---- every modal screen and dialog ---------------------------------------------------------------------------


async def _picker(pilot):
    await pilot.press("ctrl+l")
    await wait_for_screen(pilot, ModelPickerScreen, "the model picker")


async def _connect(pilot):
    await _picker(pilot)
    pilot.app.screen.ask_server()


async def _export(pilot):
    await pilot.press("ctrl+o")
    await wait_for_screen(pilot, ConversationsScreen, "the conversation list")
    await pilot.press("ctrl+e")


async def _delete(pilot):
    await pilot.press("ctrl+o")
    await wait_for_screen(pilot, ConversationsScreen, "the conversation list")
    await pilot.press("ctrl+d")


async def _system_prompt(pilot):
    pilot.app.chat.action_system_prompt()   # (the palette's "System prompt")


async def _unknown_word(pilot):
    chat = pilot.app.chat
    chat.prompt.focus()
    chat.prompt.value = "/frobnicate this"
    await pilot.press("enter")


# name: (how to open it, its screen type, the controls it must show)
DIALOGS = {
    "quit": (lambda pilot: pilot.press("ctrl+c"), ConfirmScreen, (Button,)),
    "model picker": (_picker, ModelPickerScreen, (OptionList, Input, Button)),
    "connect": (_connect, TextPromptScreen, (Input,)),
    "image path": (lambda pilot: pilot.press("ctrl+f"), TextPromptScreen, (Input,)),
    "system prompt": (_system_prompt, TextPromptScreen, (Input,)),
    "conversation list": (lambda pilot: pilot.press("ctrl+o"), ConversationsScreen, (Input, OptionList)),
    "export": (_export, TextPromptScreen, (Input,)),
    "delete": (_delete, ConfirmScreen, (Button,)),
    "unknown /word": (_unknown_word, ConfirmScreen, (Button,)),
    "compare": (lambda pilot: pilot.press("ctrl+k"), CompareScreen, (DataTable,)),
    "help": (lambda pilot: pilot.press("f1"), HelpScreen, ()),
    "replay": (lambda pilot: pilot.press("ctrl+r"), ReplayScreen, ()),
}


@pytest.mark.parametrize("size", SIZES)
async def test_every_dialog_shows_its_controls_on_screen_and_esc_closes_it(app_env, size):
    app = make_app("dg_vision", max_tokens=16, max_denoising_steps=3)   # a vision model: the image dialog too
    async with app.run_test(size=size) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "a first question")
        await wait_for_answer(pilot)
        for name, (open_it, kind, controls) in DIALOGS.items():
            chat = app.chat
            assert app.screen is chat, name
            await open_it(pilot)
            await wait_for(pilot, lambda: isinstance(app.screen, kind) and (
                name not in ("connect", "export", "delete") or app.screen.query(Input) or app.screen.query(Button)),
                name)
            await pilot.pause()
            dialog = app.screen
            assert dialog.focused is None or inside_screen(dialog.focused), (name, dialog.focused)
            for control in controls:
                shown = [w for w in dialog.query(control) if w.display and w.visible]
                assert shown, (name, control)
                # The main controls fit the screen as the dialog opens (at 80×24 the picker's list scrolls and
                # its path field and buttons come into view with the focus: tests/test_tui_everyday.py).
                for widget in shown:
                    if size == (100, 30) or widget is dialog.focused:
                        assert inside_screen(widget), (name, widget, widget.region)
            for _ in range(3):   # Esc closes it (a picker opened over the connect dialog closes with it)
                if app.screen is chat:
                    break
                await pilot.press("escape")
                await pilot.pause()
            assert app.screen is chat, (name, app.screen)
