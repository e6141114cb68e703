"""The themes as Textual `Theme` objects (the package itself stays free of Textual, so settings code can list
and check theme names without it)."""

from __future__ import annotations

from textual.theme import Theme

from . import _THEME_DATA


def load_themes() -> list[Theme]:
    """The themes, default first, ready for `App.register_theme`."""
    return [Theme(**data) for data in _THEME_DATA]
