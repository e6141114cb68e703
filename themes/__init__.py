"""diffusion-chat's Textual themes: dark (the default), light and high contrast.

Each theme is a TOML file in this folder holding the fields of `textual.theme.Theme`; its `[variables]`
table adds the colours of the denoising canvas (CANVAS_VARIABLES), which the app's CSS uses as
`$canvas-low-entropy` and so on. Textual's built-in themes lack those variables, so an app that lets people
pick a built-in theme should return `canvas_variable_defaults()` from `App.get_theme_variable_defaults`.
"""

from __future__ import annotations

import sys
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

# In menu order; the first is the default.
_THEME_FILES = ("dark.toml", "light.toml", "high-contrast.toml")

CANVAS_VARIABLES = (
    "canvas-pending",  # the live canvas's edge: a block still being denoised
    "canvas-noise",  # positions still masked
    "canvas-low-entropy",  # confident predictions
    "canvas-high-entropy",  # unsure predictions
)


def _read_theme_data(filename: str) -> dict[str, Any]:
    return tomllib.loads(resources.files(__package__).joinpath(filename).read_text(encoding="utf-8"))


# Read without Textual so that settings code can list and validate names cheaply.
_THEME_DATA = [_read_theme_data(filename) for filename in _THEME_FILES]
THEME_NAMES: tuple[str, ...] = tuple(data["name"] for data in _THEME_DATA)
DEFAULT_THEME = THEME_NAMES[0]


def canvas_variable_defaults() -> dict[str, str]:
    """Canvas colours from the default theme, for Textual themes that do not define them."""
    return {name: _THEME_DATA[0]["variables"][name] for name in CANVAS_VARIABLES}
