"""The sampler side panel: the loaded family's settings, validated as they are typed.

A value is checked with `engine.Settings(...).validated()` on every keystroke; a bad one shows the
SettingsError line under the fields and is not used. Every valid change is announced with
`SamplerPanel.Changed`, which the app applies from the next turn and saves. The panel also chooses what
the canvas shows for positions not yet accepted (`SamplerPanel.CanvasModeChanged`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select, Static, Switch

from engine.errors import SettingsError
from engine.settings import SAMPLERS, Settings

from .canvas import CanvasMode


@dataclass(frozen=True)
class Field:
    name: str        # engine.Settings attribute
    label: str
    kind: type       # int, float, bool (a switch) or str (a choice among `choices`)
    choices: tuple[str, ...] = ()


FIELDS_BY_FAMILY: dict[str, tuple[Field, ...]] = {
    "diffusion_gemma": (
        Field("diffusion_sampler", "Sampler", str, SAMPLERS),
        Field("max_denoising_steps", "Steps (max per block)", int),
        Field("diffusion_threshold", "Threshold (confidence sampler)", float),
        Field("entropy_bound", "Entropy bound", float),
        Field("diffusion_min_canvas_length", "Min canvas", int),
        Field("diffusion_max_canvas_length", "Max canvas", int),
        Field("diffusion_full_canvas", "Full canvas", bool),
        Field("temp", "Temperature", float),
        Field("seed", "Seed", int),
        Field("max_tokens", "Max tokens", int),
    ),
    "llada2_moe": (
        Field("max_denoising_steps", "Steps (per block)", int),
        Field("block_length", "Block length", int),
        Field("diffusion_threshold", "Threshold start", float),
        Field("diffusion_threshold_end", "Threshold end", float),
        Field("temp", "Temperature", float),
        Field("top_k", "Top-k", int),
        Field("top_p", "Top-p", float),
        Field("seed", "Seed", int),
        Field("max_tokens", "Max tokens", int),
    ),
}

_DEFAULTS = Settings()


def reset_to_checkpoint_defaults(settings: Settings, family: str) -> Settings:
    """`settings` with every field the family's panel shows put back to "use the checkpoint's value"."""
    return settings.replace(**{f.name: getattr(_DEFAULTS, f.name) for f in FIELDS_BY_FAMILY.get(family, ())})


def parse_value(field: Field, text: str):
    """The typed text as the field's type; empty means the default (for most fields: "use the checkpoint's
    value"). SettingsError, in the engine's words, if it is not a number of the right kind."""
    text = text.strip()
    if not text:
        return getattr(_DEFAULTS, field.name)
    what = "a whole number" if field.kind is int else "a number"
    try:
        value = field.kind(text)
    except ValueError:
        raise SettingsError(f"{field.label.lower()} must be {what}, got {text!r}")
    if not math.isfinite(value):
        raise SettingsError(f"{field.label.lower()} must be {what}, got {text!r}")
    return value


def _shown(value) -> str:
    return "" if value is None else str(value)


class SamplerPanel(VerticalScroll):
    class Changed(Message):
        def __init__(self, settings: Settings):
            super().__init__()
            self.settings = settings

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
        self.can_focus = False

    def compose(self) -> ComposeResult:
        yield from self._contents()

    async def show_settings(self, family: str | None, settings: Settings, canvas_mode: CanvasMode,
                            defaults: dict | None = None) -> None:
        """Rebuild the fields for `family`, filled from `settings`; empty fields show the checkpoint's
        value from `defaults` (`engine.Model.setting_defaults()`)."""
        self.family, self.settings, self.canvas_mode = family, settings, canvas_mode
        self.defaults = defaults or {}
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
        if self.family not in FIELDS_BY_FAMILY:
            return widgets + [Static("Load a model to see its settings.", classes="panel-hint")]
        widgets.append(Static("Empty = checkpoint default. Used from the next turn.", classes="panel-hint"))
        widgets.append(Label("Canvas shows, until accepted", classes="field-label"))
        widgets.append(Select([("the model's candidates", "candidates"), ("the noise / mask tokens", "noise")],
                              value=self.canvas_mode, allow_blank=False, id="canvas-mode", compact=True))
        for field in FIELDS_BY_FAMILY[self.family]:
            widgets.append(Label(field.label, classes="field-label"))
            widgets.append(self._editor(field, getattr(self.settings, field.name)))
        widgets.append(Static("", id="sampler-error", markup=False))
        widgets.append(Button("Reset to checkpoint defaults", id="sampler-reset", compact=True))
        return widgets

    def _editor(self, field: Field, value):
        editor_id = f"setting-{field.name}"
        if field.kind is bool:
            return Switch(value=bool(value), id=editor_id)
        if field.kind is str:
            options = [(choice, choice) for choice in field.choices]
            default = self.defaults.get(field.name)
            return Select(options, value=value if value in field.choices else Select.NULL,
                          prompt=f"{default} (checkpoint)" if default else "checkpoint default",
                          allow_blank=True, id=editor_id, compact=True)
        default = self.defaults.get(field.name)
        placeholder = "off" if default is None and field.name in ("top_k", "top_p") else _shown(default) or "default"
        return Input(_shown(value), placeholder=placeholder, id=editor_id, compact=True)

    def _field(self, editor_id: str | None) -> Field | None:
        name = (editor_id or "").removeprefix("setting-")
        return next((f for f in FIELDS_BY_FAMILY.get(self.family, ()) if f.name == name), None)

    def _apply(self, field: Field, value) -> None:
        error = self.query_one("#sampler-error", Static)
        editor = self.query_one(f"#setting-{field.name}")
        try:
            candidate = self.settings.replace(**{field.name: value}).validated()
        except SettingsError as exc:
            error.update(str(exc))
            editor.add_class("-invalid")
            return
        error.update("")
        editor.remove_class("-invalid")
        if candidate != self.settings:
            self.settings = candidate
            self.post_message(self.Changed(candidate))

    @on(Input.Changed)
    def _input_changed(self, event: Input.Changed) -> None:
        field = self._field(event.input.id)
        if field is None:
            return
        event.stop()
        try:
            value = parse_value(field, event.value)
        except SettingsError as exc:
            self.query_one("#sampler-error", Static).update(str(exc))
            event.input.add_class("-invalid")
            return
        self._apply(field, value)

    @on(Switch.Changed)
    def _switch_changed(self, event: Switch.Changed) -> None:
        field = self._field(event.switch.id)
        if field is not None:
            event.stop()
            self._apply(field, event.value)

    @on(Select.Changed, "#canvas-mode")
    def _canvas_mode_changed(self, event: Select.Changed) -> None:
        event.stop()
        self.canvas_mode = event.value
        self.post_message(self.CanvasModeChanged(event.value))

    @on(Select.Changed)
    def _select_changed(self, event: Select.Changed) -> None:
        field = self._field(event.select.id)
        if field is not None:
            event.stop()
            self._apply(field, None if event.value is Select.NULL else event.value)

    @on(Button.Pressed, "#sampler-reset")
    async def _reset(self, event: Button.Pressed) -> None:
        event.stop()
        settings = reset_to_checkpoint_defaults(self.settings, self.family)
        await self.show_settings(self.family, settings, self.canvas_mode)
        self.post_message(self.Changed(settings))

