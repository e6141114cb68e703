"""What ctrl+c does when nothing is selected to copy (the prompt's and the screen's own ctrl+c copy a selection
first): cancel the answer being written, else ask whether to quit.

Textual's default answer to ctrl+c is a notice to press ctrl+q; a person who presses ctrl+c means either "stop
that" or "let me out", and gets both here without losing anything by accident.
"""

from __future__ import annotations

from textual.binding import Binding

from .dialogs import ConfirmScreen

QUIT_QUESTION = "Quit diffusion-chat? (conversations are saved)"


class QuitScreen(ConfirmScreen):
    """The quit confirmation; ctrl+c again (or y, or Enter on Quit) quits."""

    BINDINGS = [Binding("ctrl+c", "dismiss(True)", "Quit", show=False, priority=True)]

    def __init__(self):
        super().__init__(QUIT_QUESTION, confirm_label="Quit")


def interrupt(app) -> None:
    """ctrl+c with nothing to copy."""
    session = app.session
    if session is not None and session.generation is not None:
        session.cancel()
        app.notify("Cancelled the answer (ctrl+c). ctrl+q quits.", markup=False)
        return
    app.push_screen(QuitScreen(), lambda quit: app.exit() if quit else None)
