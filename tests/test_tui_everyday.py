"""The everyday path (issue 24) at 80×24 and 100×30: a failed load keeps the working model and says why where
the eye is, every dialog fits or scrolls to its focused control, and the first load says what it does."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import socket

import pytest
from textual.widgets import Button, Input, Select, Switch

from serve_helpers import serving
from tui_helpers import (CHECKPOINTS, QUICK, ScriptedAnswer, app_env, make_app, notices,  # noqa: F401 (app_env)
                         scripted_block, scripted_turn, scripted_worker, send, wait_for, wait_for_answer,
                         wait_for_model, wait_for_screen)
from engine.settings import Settings
from tui.app import AppOptions, DiffusionChatApp
from tui.config import load_config, save_config
from tui.screens.model_picker import ModelPickerScreen
from tui.screens.help import HELP
from tui.widgets.messages import AssistantMessage
from tui.widgets.sampler_panel import SamplerPanel
from tui.widgets.token_count import TokenCount

SIZES = [(80, 24), (100, 30)]


def shown_whole(widget) -> bool:
    """The widget is drawn, unclipped, inside the screen (not scrolled away, not below the terminal's edge)."""
    region, screen = widget.region, widget.screen.region
    return widget.display and region.height > 0 and screen.contains_region(region) and \
        all(ancestor.content_region.contains_region(region) for ancestor in widget.ancestors
            if getattr(ancestor, "is_scrollable", False) and ancestor is not widget.screen)


async def wait_shown_whole(pilot, widget, *texts: str, what: str) -> None:
    """Until the widget says every one of `texts` and is shown whole. It is laid out a refresh after its text
    changes, later still on a loaded machine, so the layout is waited for with the text; a clipped one times out."""
    await wait_for(pilot, lambda: all(text in str(widget.render()) for text in texts) and shown_whole(widget), what)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _picker(pilot) -> ModelPickerScreen:
    return await wait_for_screen(pilot, ModelPickerScreen, "the model picker")


@pytest.mark.parametrize("size", SIZES)
async def test_a_bad_path_keeps_the_working_model_and_shows_why_at_the_top(app_env, size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await wait_for_model(pilot)
        working = app.model_info
        await pilot.press("ctrl+l")
        picker = await _picker(pilot)
        field = picker.query_one("#model-ref", Input)
        field.focus()
        field.value = "/tmp/nonexistent-model"
        await pilot.press("enter")
        status = picker.query_one("#load-status")
        await wait_shown_whole(pilot, status, "not found", what=f"the error shown whole at {size}")
        assert any("not found" in notice and working.name in notice for notice in notices(app))
        assert app.model_info is working and app.session.model is working
        assert app.chat.status_bar.model == working.name
        await pilot.press("escape")
        await send(pilot, "still there?")
        await wait_for_answer(pilot)


async def test_a_closed_port_keeps_the_local_model(app_env):
    app = make_app()
    async with app.run_test(size=SIZES[0]) as pilot:
        await wait_for_model(pilot)
        worker, working = app.engine_worker, app.model_info
        app.connect(f"http://127.0.0.1:{closed_port()}")
        await wait_for(pilot, lambda: any("cannot use" in notice for notice in notices(app)), "the refusal")
        assert app.engine_worker is worker and app.session.backend is worker and app.model_info is working
        await send(pilot, "local still")
        await wait_for_answer(pilot)


@pytest.mark.parametrize("size", SIZES)
async def test_a_wrong_api_key_at_start_says_so_in_the_picker(app_env, size):
    with serving("dg_text", api_key="right") as server:
        app = DiffusionChatApp(AppOptions(server=server.url, api_key="wrong"))
        async with app.run_test(size=size) as pilot:
            picker = await _picker(pilot)
            status = picker.query_one("#load-status")
            await wait_shown_whole(pilot, status, "API key", what=f"the API key's error shown whole at {size}")
            assert any("API key" in notice for notice in notices(app))


async def test_a_relative_model_folder_is_saved_as_an_absolute_path(app_env):
    shutil.copytree(CHECKPOINTS / "dg_text", app_env / "models" / "dg_text")
    app = DiffusionChatApp(AppOptions(model="models/dg_text", settings=Settings(**QUICK)))
    async with app.run_test(size=SIZES[0]) as pilot:
        await wait_for_model(pilot)
    assert load_config().config.model == str((app_env / "models" / "dg_text").resolve())


@pytest.mark.parametrize("size", SIZES)
async def test_a_saved_model_that_cannot_load_says_so_and_offers_the_picker(app_env, size):
    loaded = load_config()
    save_config(dataclasses.replace(loaded.config, model=str(app_env / "moved-away")), loaded.path)
    app = DiffusionChatApp(AppOptions())
    async with app.run_test(size=size) as pilot:
        picker = await _picker(pilot)
        status = picker.query_one("#load-status")
        await wait_shown_whole(pilot, status, "The last model", "moved-away", what=f"the reason shown whole at {size}")


async def _open_picker(pilot):
    await pilot.press("ctrl+l")


async def _open_connect(pilot):
    await pilot.press("ctrl+l")
    picker = await _picker(pilot)
    picker.ask_server()


MODALS = {
    "picker": _open_picker,
    "connect": _open_connect,
    "image path": lambda pilot: pilot.press("ctrl+f"),
    "conversation list": lambda pilot: pilot.press("ctrl+o"),
    "compare": lambda pilot: pilot.press("ctrl+k"),
    "help": lambda pilot: pilot.press("f1"),
}


@pytest.mark.parametrize("modal", list(MODALS))
async def test_every_dialog_fits_or_scrolls_to_its_focused_control_at_80x24(app_env, modal):
    app = make_app("dg_vision" if modal == "image path" else "dg_text")   # a text-only model offers no image dialog
    async with app.run_test(size=SIZES[0]) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "a first question")
        await wait_for_answer(pilot)
        chat = app.screen
        await MODALS[modal](pilot)
        await wait_for(pilot, lambda: app.screen is not chat and app.screen.focused is not None and not (
            modal == "connect" and isinstance(app.screen, ModelPickerScreen)), "the dialog")
        dialog = app.screen
        seen = set()
        for _ in range(8):   # Tab through every control: each one, once focused, is drawn whole
            await pilot.pause()
            focused = dialog.focused
            assert focused is not None and shown_whole(focused), (modal, focused, focused.region)
            seen.add(focused)
            await pilot.press("tab")
        assert len(seen) == min(8, len(dialog.focus_chain))   # every control was reached


# ---- the sampler panel ---------------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
async def test_a_bad_sampler_value_shows_under_its_field_and_the_turn_says_what_it_used(app_env, size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await wait_for_model(pilot)
        await pilot.press("ctrl+b")
        panel = app.chat.query_one(SamplerPanel)
        steps = panel.query_one("#setting-max_denoising_steps", Input)
        steps.focus()
        await pilot.press("a", "b", "c")
        error = panel.query_one("#error-max_denoising_steps")
        await wait_shown_whole(pilot, error, "got 'abc'", what=f"the field's error shown whole at {size}")
        assert steps.region.bottom <= error.region.y <= steps.region.bottom + 1   # right under its field
        await send(pilot, "hi")
        await wait_for_answer(pilot)
        assert any("'abc' is not valid, used 6" in notice for notice in notices(app)), notices(app)
        # Esc in the panel closes it and goes back to the message box.
        steps.focus()
        await pilot.press("escape")
        await pilot.pause()
        assert not panel.has_class("-open") and app.chat.focused is app.chat.prompt


async def test_every_sampler_control_shows_its_focus_and_the_panel_scrolls_to_it(app_env):
    app = make_app()
    async with app.run_test(size=SIZES[0]) as pilot:
        await wait_for_model(pilot)
        await pilot.press("ctrl+b")
        panel = app.chat.query_one(SamplerPanel)
        controls = [w for w in panel.query("Select, Switch, Input, Button") if w.focusable]
        assert any(isinstance(w, Switch) for w in controls) and any(isinstance(w, Select) for w in controls)
        for control in controls:
            unfocused = control.styles.background
            control.focus()
            await pilot.pause()
            # Waited for, not read after one pause: the scroll to the focused control and its focus style are later
            # refreshes, which a fresh clone's run (three suites at once on 2 cores) had not drawn yet (max_tokens).
            await wait_for(pilot, lambda: shown_whole(control), f"{control!r} scrolled into view")
            if isinstance(control, (Select, Switch, Button)):
                await wait_for(pilot, lambda: control.styles.background != unfocused, f"{control!r}'s focus style")


async def test_the_message_box_keeps_40_columns_at_80_with_the_panel_open(app_env):
    app = make_app()
    async with app.run_test(size=SIZES[0]) as pilot:
        await wait_for_model(pilot)
        await pilot.press("ctrl+b")
        # Waited for, not read after one pause: moving the count under the box is a second layout pass, which a
        # loaded machine had not run yet after one pause (a full-suite run failed on it).
        await wait_for(pilot, lambda: shown_whole(app.chat.token_count), "the count shown under the message box")
        assert app.chat.prompt.outer_size.width >= 40
        await pilot.press("ctrl+b")
        await wait_for(pilot, lambda: app.chat.prompt.outer_size.width >= 55, "the box beside the count again")


# ---- the token counter -----------------------------------------------------------------------------------


def count_shown(app) -> tuple[int | None, int | None]:
    """(None, None) until the counter shows a count: it lands after a debounce, and under load a quick answer
    can finish before it (the wait then failed on the empty counter instead of waiting for it)."""
    shown = str(app.chat.token_count.render()).replace(",", "").split(" ", 3)
    if len(shown) < 4:
        return None, None
    return int(shown[0]), int(shown[2])


async def test_the_token_count_follows_new_chats_opened_chats_and_model_switches(app_env):
    app = make_app()

    def expected() -> int:   # the next turn's prompt as the engine would count it, nothing typed
        return app.model_info.count_tokens(app.session.draft_messages(""), app.session.think)

    async with app.run_test(size=SIZES[0]) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "count these words please")
        await wait_for_answer(pilot)
        conversation = app.session.conversation_id
        with_history = expected()
        await wait_for(pilot, lambda: count_shown(app)[0] == with_history, "the count of the conversation")
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: count_shown(app)[0] == 0, "the new chat's count")   # nothing to send yet
        await app._open_conversation(conversation)
        await wait_for(pilot, lambda: count_shown(app)[0] == with_history, "the opened chat's count")
        app.load_model(str(CHECKPOINTS / "llada2"))
        await wait_for(pilot, lambda: app.model_info.name == "llada2", "the other model")
        await wait_for(pilot, lambda: count_shown(app) == (expected(), app.model_info.context_length),
                       "its count and context")


# ---- thinking ----------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def thinking_on_with_plain_answers():
    """The app at 80×24 with thinking switched on (ctrl+t) and a model that answers each turn with one block of
    plain text, no reasoning: yields (pilot, the script, for `scripted_turn`)."""
    script = ScriptedAnswer([scripted_block(0, content="Plain answer. ")])
    app = make_app("dg_text", make_worker=scripted_worker(script))
    async with app.run_test(size=SIZES[0]) as pilot:
        await wait_for_model(pilot)
        await pilot.press("ctrl+t")
        yield pilot, script


async def test_thinking_on_with_a_model_that_gives_none_says_so(app_env):
    async with thinking_on_with_plain_answers() as (pilot, script):
        await scripted_turn(pilot, script, "think about it")
        assert any("No reasoning from this model" in notice for notice in notices(pilot.app)), notices(pilot.app)


async def test_a_collapsed_thinking_pane_reopens_from_the_keyboard(app_env):
    script = ScriptedAnswer([scripted_block(0, reasoning="Think first."), scripted_block(1, content="Then answer.")])
    app = make_app("dg_text", think=True, make_worker=scripted_worker(script))
    async with app.run_test(size=SIZES[0]) as pilot:
        await wait_for_model(pilot)
        await scripted_turn(pilot, script, "think")
        answer = app.chat.query_one(AssistantMessage)
        assert answer.thinking.collapsed
        await pilot.press("ctrl+up")   # the answer takes the focus
        await wait_for(pilot, lambda: app.chat.focused is answer, "the answer's focus")
        await pilot.press("t")
        assert not answer.thinking.collapsed
        await pilot.press("t")
        assert answer.thinking.collapsed
        assert "| t | an answer: open / close its Thinking pane |" in HELP


async def test_each_answer_records_whether_thinking_was_on_and_the_export_says_so(app_env):
    # Thinking on with a model that answers without reasoning: the export must not infer "off" from the missing
    # reasoning; the answer's saved stats say what it was asked.
    async with thinking_on_with_plain_answers() as (pilot, script):
        app = pilot.app
        for text in ("on", "off"):
            await scripted_turn(pilot, script, text)
            await pilot.press("ctrl+t")   # the next answer with the other setting
        answers = [m for m in app.store.get(app.session.conversation_id).messages if m.role == "assistant"]
        assert [a.stats["think"] for a in answers] == [True, False] and not any(a.reasoning for a in answers)
        exported = app.store.export_markdown(app.session.conversation_id)
        assert "- Thinking: in 1 of 2 answers" in exported
        first, second = exported.split("## Assistant")[1:]
        assert "thinking on" in first and "thinking off" in second


# ---- the canvas between blocks -------------------------------------------------------------------------------


async def test_the_last_frame_of_a_block_stays_until_the_next_block_draws(app_env):
    script = ScriptedAnswer([scripted_block(0, content="First. "), scripted_block(1, content="Second.")])
    app = make_app("dg_text", make_worker=scripted_worker(script))
    async with app.run_test(size=SIZES[0]) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "two blocks")
        answer = app.chat.query(AssistantMessage).last()
        await wait_for(pilot, lambda: answer.canvas.step is not None and answer.canvas.step.block == 0, "block 0")
        last_of_block_0 = answer.canvas._lines
        await answer.add_block("First. ", "")   # the block commits (as the session does), no new frame yet
        assert answer.canvas.step is not None and answer.canvas._lines == last_of_block_0 and answer.canvas.display
        script.advance()
        await wait_for(pilot, lambda: answer.canvas.step is not None and answer.canvas.step.block == 1, "block 1")
        script.advance()
        await wait_for_answer(pilot)
        assert not answer.canvas.display


# ---- the first load says what it does -------------------------------------------------------------------------


async def test_the_first_load_says_what_is_loading_and_what_it_does(app_env, monkeypatch):
    from tui.widgets.status_bar import StatusBar

    shown = []
    set_activity = StatusBar.set_activity
    monkeypatch.setattr(StatusBar, "set_activity", lambda bar, text: shown.append(text) or set_activity(bar, text))
    app = make_app("dg_text")
    async with app.run_test(size=SIZES[0]) as pilot:
        await wait_for_model(pilot)
    reading = next(text for text in shown if text.startswith("reading dg_text ("))
    assert reading.endswith(" MiB)…")
    compiling = "compiling kernels (once per install)…"   # on the CPU path only
    assert compiling not in shown or shown.index(reading) < shown.index(compiling)


@pytest.mark.parametrize("size", SIZES)
async def test_a_second_enter_while_the_picked_model_loads_does_not_cancel_it(app_env, monkeypatch, size):
    """The picker called its busy flag `loading`, Textual's reactive that swaps a widget's content for a spinner:
    the list lost focus to the Cancel button, so a double-tapped Enter cancelled the load ("Loading
    cancelled.") and the load's status and progress never showed."""
    import threading

    import engine.io.loader as loader

    release, load = threading.Event(), loader.load

    def held_load(*args, **kwargs):   # the load waits until the test has pressed Enter again
        release.wait(10)
        return load(*args, **kwargs)

    monkeypatch.setattr(loader, "load", held_load)
    app = make_app(None)
    async with app.run_test(size=size) as pilot:
        picker = await _picker(pilot)
        await pilot.pause()
        await pilot.press("down", "enter")
        status = picker.query_one("#load-status")
        await wait_for(pilot, lambda: "Loading" in str(status.render()), "the load's status")
        assert picker.focused is picker.query_one("#model-choices") and shown_whole(status)
        await pilot.press("enter")
        await pilot.pause()
        release.set()
        await wait_for_model(pilot)
        assert app.model_info.name == "llada2-demo"


@pytest.mark.parametrize("size", SIZES)
async def test_a_count_that_lands_while_the_counter_moves_is_shown_by_the_same_widget(app_env, size):
    # With the sampler panel open (at 80 and at 100 columns) the count goes under the message box, and back
    # beside it once the panel closes: a class on its row moves it, so the widget a count from the worker
    # thread lands in is the one shown, before and after the layout switches.
    app = make_app("dg_text")
    async with app.run_test(size=size) as pilot:
        await wait_for_model(pilot)
        screen, counter = app.chat, app.chat.counter
        count = screen.query_one(TokenCount)
        # The start's own count first, so that it cannot land after the ones this test sends.
        await wait_for(pilot, lambda: "tokens" in str(count.render()), "the first count")
        row = screen.query_one("#prompt-row")
        for tokens, stacked in ((7, True), (9, False)):
            screen.action_toggle_sampler()   # the row's class switches now, its layout at the next refresh
            assert row.has_class("-stacked") == stacked
            counter._request += 1   # as a newer count would: any count still on its way is now stale
            counter._show(app.session.model, tokens, counter._request)   # lands before that refresh
            await pilot.pause()
            assert screen.query_one(TokenCount) is count and count.parent is row
            assert str(count.render()).startswith(f"{tokens} / "), count.render()
            prompt = screen.prompt.region
            if stacked:
                assert count.region.y == prompt.bottom and count.region.height == 1   # under the message box
            else:
                assert count.region.x >= prompt.right and count.region.y == prompt.y   # beside it


async def test_a_count_that_lands_while_the_app_closes_does_not_fail_it(app_env, monkeypatch):
    # Seen in CI: a count came back from its thread while a pilot test's app closed, and NoMatches('TokenCount')
    # failed it. run_test's end removes the screen's widgets without app.exit(), so the screen still looks
    # attached; its own Unmount comes once its widgets are gone, and the counts land there.
    from tui.screens.chat import ChatScreen
    from tui.widgets.prompt import PromptInput

    landed = []

    def on_unmount(screen):
        landed.append(not screen.query(PromptInput) and not screen.query(TokenCount))
        for tokens in (7, None):   # None: the counter would read the prompt too
            screen.counter._request += 1
            screen.counter._show(screen.session.model, tokens, screen.counter._request)

    monkeypatch.setattr(ChatScreen, "on_unmount", on_unmount, raising=False)
    app = make_app("dg_text")
    async with app.run_test(size=SIZES[0]) as pilot:
        await wait_for_model(pilot)
    # The counts landed with the prompt and the counter gone (run_test re-raises what failed the app).
    assert landed == [True]
