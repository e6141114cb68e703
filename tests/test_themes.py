"""The shipped themes: they load into Textual, carry the canvas colours and stay readable."""

from __future__ import annotations

import dataclasses

import pytest
from textual.app import App, ComposeResult
from textual.color import Color
from textual.theme import Theme
from textual.widgets import Static

import themes
from themes import CANVAS_VARIABLES, DEFAULT_THEME, THEME_NAMES, canvas_variable_defaults
from themes.textual_themes import load_themes


def relative_luminance(colour: str) -> float:
    """WCAG 2.x relative luminance of an sRGB colour."""

    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = Color.parse(colour).rgb
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def contrast_ratio(first: str, second: str) -> float:
    lighter, darker = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_contrast_ratio_matches_the_wcag_reference_values():
    assert contrast_ratio("#ffffff", "#000000") == pytest.approx(21.0)
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
    assert contrast_ratio("#123456", "#123456") == pytest.approx(1.0)


def test_three_themes_load_with_unique_names_default_first():
    loaded = load_themes()
    assert [theme.name for theme in loaded] == list(THEME_NAMES)
    assert len(set(THEME_NAMES)) == 3
    assert DEFAULT_THEME == loaded[0].name
    assert loaded[0].dark and not loaded[1].dark
    assert "high-contrast" in loaded[2].name


@pytest.mark.parametrize("theme", load_themes(), ids=lambda theme: theme.name)
def test_every_colour_field_and_canvas_variable_is_set_and_parses(theme: Theme):
    for field in ("primary", "secondary", "accent", "foreground", "background", "surface", "panel",
                  "success", "warning", "error"):
        value = getattr(theme, field)
        assert value, f"{theme.name} lacks {field}"
        Color.parse(value)
    assert set(CANVAS_VARIABLES) <= set(theme.variables)
    for name in CANVAS_VARIABLES:
        Color.parse(theme.variables[name])


@pytest.mark.parametrize("theme", load_themes(), ids=lambda theme: theme.name)
def test_text_is_readable_in_every_theme(theme: Theme):
    # WCAG AA for body text in all themes.
    assert contrast_ratio(theme.foreground, theme.background) >= 4.5
    # Canvas tokens are coloured from confident to unsure on the canvas's surface; accepted ones are bold, so
    # WCAG's 3:1 for bold text applies at both ends of the scale.
    for name in ("canvas-low-entropy", "canvas-high-entropy"):
        assert contrast_ratio(theme.variables[name], theme.surface) >= 3, name


def test_high_contrast_theme_meets_wcag_aaa():
    theme = next(theme for theme in load_themes() if "high-contrast" in theme.name)
    assert theme.background == "#000000" and theme.foreground == "#ffffff"
    assert contrast_ratio(theme.foreground, theme.background) >= 7
    coloured = [theme.primary, theme.secondary, theme.accent, theme.success, theme.warning, theme.error]
    coloured += [theme.variables[name] for name in CANVAS_VARIABLES]
    for colour in coloured:
        assert contrast_ratio(colour, theme.background) >= 7, colour
    assert theme.text_alpha == 1.0


def test_theme_files_hold_only_theme_fields():
    known = {field.name for field in dataclasses.fields(Theme)}
    for data in themes._THEME_DATA:
        assert set(data) <= known


class CanvasApp(App):
    CSS = "#cell { color: $canvas-pending; background: $canvas-noise; }"

    def compose(self) -> ComposeResult:
        yield Static("x", id="cell")

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return canvas_variable_defaults()


async def test_app_css_resolves_canvas_colours_for_our_themes_and_builtin_ones():
    app = CanvasApp()
    for theme in load_themes():
        app.register_theme(theme)
    async with app.run_test() as pilot:
        for theme in load_themes():
            app.theme = theme.name
            await pilot.pause()
            cell = app.query_one("#cell")
            assert cell.styles.color == Color.parse(theme.variables["canvas-pending"])
            assert cell.styles.background == Color.parse(theme.variables["canvas-noise"])
        # A built-in theme without our variables falls back to the defaults instead of breaking the CSS.
        app.theme = "textual-light"
        await pilot.pause()
        assert app.query_one("#cell").styles.color == Color.parse(canvas_variable_defaults()["canvas-pending"])
