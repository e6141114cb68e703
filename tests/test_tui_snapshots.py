"""Screenshots of the main layouts (pytest-textual-snapshot). Update with `pytest --snapshot-update`.

Deterministic: a fixed terminal size, an empty HF cache and fresh folders, the model loaded before the
shot, and nothing on screen that depends on the clock or on timing.
"""

from __future__ import annotations

from tui_helpers import app_env, make_app, wait_for, wait_for_model  # noqa: F401  (app_env is a fixture)

SIZE = (110, 34)


async def _model_loaded(pilot) -> None:
    await wait_for_model(pilot)
    # The prompt's token count arrives from a worker thread after a debounce: wait for it, not for time.
    await wait_for(pilot, lambda: "tokens" in str(pilot.app.screen.query_one("#token-count").render()),
                   "the token count")
    # That wait lasts long enough for the prompt's cursor to blink off; a shot must not depend on when it is taken.
    pilot.app.screen.query_one("#prompt").cursor_blink = False
    await pilot.pause()


def test_empty_chat(app_env, snap_compare):
    assert snap_compare(make_app("dg_text"), terminal_size=SIZE, run_before=_model_loaded)


async def _sampler_panel_open(pilot) -> None:
    await _model_loaded(pilot)
    await pilot.press("ctrl+b")
    await pilot.pause()


def test_sampler_panel_open(app_env, snap_compare):
    assert snap_compare(make_app("dg_text"), terminal_size=SIZE, run_before=_sampler_panel_open)


def test_llada2_sampler_panel(app_env, snap_compare):
    assert snap_compare(make_app("llada2"), terminal_size=SIZE, run_before=_sampler_panel_open)


def test_model_picker(app_env, snap_compare):
    async def scanned(pilot) -> None:
        picker = pilot.app.screen
        await wait_for(pilot, lambda: "cache" in str(picker.query_one("#cache-status").render())
                       and "Scanning" not in str(picker.query_one("#cache-status").render()), "the cache scan")
        await pilot.pause()

    assert snap_compare(make_app(None), terminal_size=SIZE, run_before=scanned)
