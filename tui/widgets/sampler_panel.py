"""The sampler side panel: the loaded family's settings, from the engine's settings schema, validated as they
are typed.

A value is checked with `engine.settings` on every keystroke; a bad one shows the SettingsError line (settings
named by their labels) right under its field and is not used (`unused_values` says what was used instead, for
the turn sent meanwhile). Esc leaves the panel. Every valid change is announced with
`SamplerPanel.Changed`, which the app applies from the next turn and saves. The panel also chooses what the
canvas shows for positions not yet accepted (`SamplerPanel.CanvasModeChanged`).
"""

from __future__ import annotations

from typing import Collection

from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select, Static, Switch

from engine.errors import SettingsError
from engine.settings import SPECS, Settings, parse_text, specs_for

from ..config import CanvasMode


def reset_to_checkpoint_defaults(settings: Settings, family: str) -> Settings:
    """`settings` with every field the family's panel shows put back to "use the checkpoint's value"."""
    return settings.replace(**{name: None for name in specs_for(family)})


def _shown(value) -> str:
    return "" if value is None else str(value)


class SamplerPanel(VerticalScroll):

    DEFAULT_CSS = """
    SamplerPanel {
        display: none;
        width: 40;
        padding: 0 1;
        background: $panel;
        border-left: vkey $primary;
    }
    SamplerPanel.-open {
        display: block;
    }
    SamplerPanel .panel-title {
        text-style: bold;
        color: $primary;
    }
    SamplerPanel .panel-hint {
        color: $text-muted;
    }
    SamplerPanel .field-label {
        margin: 1 0 0 0;
    }
    SamplerPanel Switch {
        border: none;
        padding: 0 1;
    }
    /* Every control shows where the focus is: the compact dropdowns and the switch draw none of their own. */
    SamplerPanel Switch:focus, SamplerPanel Select:focus-within, SamplerPanel Button:focus {
        border: none;
        background: $accent 50%;
    }
    SamplerPanel Input.-invalid {
        background: $error 30%;
    }
    SamplerPanel .field-error {
        display: none;
        color: $error;
    }
    SamplerPanel .field-error.-shown {
        display: block;
    }
    SamplerPanel #sampler-reset {
        margin: 1 0;
    }
    """
    class Changed(Message):
        def __init__(self, settings: Settings):
            super().__init__()
            self.settings = settings

    class Closed(Message):
        """Esc in the panel: it closed (the focus goes back to the prompt)."""

    BINDINGS = [("escape", "close", "Close the panel")]

    class CanvasModeChanged(Message):
        def __init__(self, mode: CanvasMode):
            super().__init__()
            self.mode = mode

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.family: str | None = None
        self.settings = Settings()
        self.canvas_mode: CanvasMode = "candidates"
        self.defaults: dict = {}
        self.offered: set[str] | None = None
        self.invalid: dict[str, str] = {}   # setting -> the text typed that is not used (its error is shown)
        self.can_focus = False

    def action_close(self) -> None:
        self.remove_class("-open")
        self.post_message(self.Closed())

    def unused_values(self) -> list[str]:
        """For each field whose typed text is not valid: what the next turn uses instead."""
        notes = []
        for name, typed in self.invalid.items():
            used = getattr(self.settings, name)
            used = f"{used} " if used is not None else f"{self.defaults.get(name, 'the default')} (checkpoint) "
            notes.append(f"{SPECS[name].label_for(self.family)}: {typed!r} is not valid, used {used.strip()}")
        return notes

    def compose(self) -> ComposeResult:
        yield from self._contents()

    async def show_settings(self, family: str | None, settings: Settings, canvas_mode: CanvasMode,
                            defaults: dict | None = None, offered: Collection[str] | None = None) -> None:
        """Rebuild the fields for `family`, filled from `settings`; empty fields show the checkpoint's
        value from `defaults` (`engine.Model.setting_defaults()`). `offered`: the only settings the backend
        takes (a remote server), None = all of the family's."""
        self.family, self.settings, self.canvas_mode = family, settings, canvas_mode
        self.defaults = defaults or {}
        self.offered = None if offered is None else set(offered)
        self.invalid = {}
        await self.remove_children()
        await self.mount_all(self._contents())

    def show_canvas_mode(self, mode: CanvasMode) -> None:
        """The mode was changed elsewhere (command palette)."""
        self.canvas_mode = mode
        for select in self.query("#canvas-mode").results(Select):
            with select.prevent(Select.Changed):
                select.value = mode

    def _contents(self) -> list[Widget]:
        widgets: list[Widget] = [Static("Sampler settings", classes="panel-title")]
        if self.family is None:
            return widgets + [Static("Load a model to see its settings.", classes="panel-hint")]
        widgets.append(Static("Empty = checkpoint default. Used from the next turn.", classes="panel-hint"))
        widgets.append(Label("Canvas shows, until accepted", classes="field-label"))
        widgets.append(Select([("the model's candidates", "candidates"), ("the noise / mask tokens", "noise")],
                              value=self.canvas_mode, allow_blank=False, id="canvas-mode", compact=True))
        for name, spec in self._specs().items():
            widgets.append(Label(spec.label_for(self.family), classes="field-label"))
            widgets.append(self._editor(name, getattr(self.settings, name)))
            widgets.append(Static("", id=f"error-{name}", classes="field-error", markup=False))
        widgets.append(Button("Reset to checkpoint defaults", id="sampler-reset", compact=True))
        return widgets

    def _editor(self, name: str, value):
        spec, editor_id, default = SPECS[name], f"setting-{name}", self.defaults.get(name)
        if spec.kind is bool:
            return Switch(value=bool(default if value is None else value), id=editor_id)
        if spec.choices:
            options = [(choice, choice) for choice in spec.choices]
            return Select(options, value=value if value in spec.choices else Select.NULL,
                          prompt=f"{default} (checkpoint)" if default else "checkpoint default",
                          allow_blank=True, id=editor_id, compact=True)
        placeholder = "off" if default is None and name in ("top_k", "top_p") else _shown(default) or "default"
        return Input(_shown(value), placeholder=placeholder, id=editor_id, compact=True)

    def _setting(self, editor_id: str | None) -> str | None:
        name = (editor_id or "").removeprefix("setting-")
        return name if self.family and name in self._specs() else None

    def _specs(self) -> dict:
        return {name: spec for name, spec in specs_for(self.family).items()
                if self.offered is None or name in self.offered}

    def _message(self, error: SettingsError) -> str:
        return error.render(lambda name: SPECS[name].label_for(self.family))

    def _show_error(self, name: str, message: str, typed: str = "") -> None:
        """The field's own error line under it ("" clears it)."""
        error = self.query_one(f"#error-{name}", Static)
        error.update(message)
        error.set_class(bool(message), "-shown")
        self.query_one(f"#setting-{name}").set_class(bool(message), "-invalid")
        if message:
            self.invalid[name] = typed
            error.scroll_visible(animate=False)
        else:
            self.invalid.pop(name, None)

    def _apply(self, name: str, value, typed: str = "") -> None:
        try:
            candidate = self.settings.replace(**{name: value}).validated()
        except SettingsError as exc:
            self._show_error(name, self._message(exc), typed or _shown(value))
            return
        self._show_error(name, "")
        if candidate != self.settings:
            self.settings = candidate
            self.post_message(self.Changed(candidate))

    @on(Input.Changed)
    def _input_changed(self, event: Input.Changed) -> None:
        name = self._setting(event.input.id)
        if name is None:
            return
        event.stop()
        try:
            value = parse_text(name, event.value)
        except SettingsError as exc:
            self._show_error(name, self._message(exc), event.value)
            return
        self._apply(name, value, event.value)

    @on(Switch.Changed)
    def _switch_changed(self, event: Switch.Changed) -> None:
        name = self._setting(event.switch.id)
        if name is not None:
            event.stop()
            self._apply(name, event.value)

    @on(Select.Changed, "#canvas-mode")
    def _canvas_mode_changed(self, event: Select.Changed) -> None:
        event.stop()
        # A Select posts Changed when mounted too, so every rebuild of the panel would report its own mode as a
        # change, and the app would handle it even while closing: only a different value is a change.
        if event.value == self.canvas_mode:
            return
        self.canvas_mode = event.value
        self.post_message(self.CanvasModeChanged(event.value))

    @on(Select.Changed)
    def _select_changed(self, event: Select.Changed) -> None:
        name = self._setting(event.select.id)
        if name is not None:
            event.stop()
            self._apply(name, None if event.value is Select.NULL else event.value)

    @on(Button.Pressed, "#sampler-reset")
    async def _reset(self, event: Button.Pressed) -> None:
        event.stop()
        settings = reset_to_checkpoint_defaults(self.settings, self.family)
        await self.show_settings(self.family, settings, self.canvas_mode, self.defaults, self.offered)
        self.post_message(self.Changed(settings))

