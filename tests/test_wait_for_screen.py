"""The app tests' `wait_for_screen` must not hand back a screen before it has mounted: CI once queried the model
picker in the moment between its push and its compose, and found nothing."""

from __future__ import annotations

import asyncio

from textual.app import App
from textual.screen import Screen
from textual.widgets import Static

from tui_helpers import wait_for_screen


class SlowToMount(Screen):
    def compose(self):
        yield Static("ready", id="ready")

    async def on_mount(self) -> None:
        await asyncio.sleep(0.2)   # a mount that takes a while, as on a busy CI machine
        self.mounted_fully = True


async def test_wait_for_screen_returns_only_once_the_screen_has_mounted():
    app = App()
    async with app.run_test() as pilot:
        app.push_screen(SlowToMount())
        screen = await wait_for_screen(pilot, SlowToMount, "the slow screen")
        assert getattr(screen, "mounted_fully", False)
        assert screen.query_one("#ready", Static)
