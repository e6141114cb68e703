"""The help screen: what the app shows and every key."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# diffusion-chat

Chat with a local **block-diffusion** language model. The answer is written a block at a time:
while a block is being denoised, the **canvas** under the answer shows every position of the block —
bright and bold once accepted, dim while still undecided, coloured from confident (green) to unsure
(orange). When the block is committed its text lands in the transcript and the canvas moves on.

| Key | Action |
|---|---|
| Enter | send the message |
| Up / Down | earlier prompts |
| Esc | cancel the answer (within one denoising step; committed blocks stay) |
| ctrl+b | sampler panel (applies from the next turn, saved) |
| ctrl+t | thinking on/off for this conversation |
| ctrl+f | attach an image by path (→ completes the path) |
| ctrl+n | new conversation |
| ctrl+o | conversations: open, search, rename (ctrl+r), delete (ctrl+d), export (ctrl+e) |
| ctrl+l | choose or load a model |
| ctrl+y | copy the last answer |
| ctrl+p | command palette: themes, canvas mode, export, … |
| F1 | this help |
| ctrl+q | quit |

Commands typed in the message box: `/image PATH` attaches an image (DiffusionGemma checkpoints with a
vision tower only; chips above the input show name, size and pixel size — press a chip to remove it).

Conversations are saved in SQLite in your data folder; settings in `config.toml` in your config folder.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,q", "dismiss(None)", "Close")]

    def __init__(self):
        super().__init__(classes="dialog-screen")

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog", id="help"):
            yield Markdown(HELP)
