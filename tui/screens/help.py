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
| shift+enter, ctrl+j | new line in the message (many terminals send shift+enter as a plain Enter: ctrl+j always works) |
| Up / Down | earlier prompts (from the first / last line of the message) |
| Esc | cancel the answer (within one denoising step; committed blocks stay); else stop editing; else back to the message box |
| ctrl+g | regenerate the last answer with the current settings: a new *revision* of it |
| ctrl+k | compare the answer's revisions side by side: settings that differ, steps, accepted per step, time, tokens |
| ctrl+r | replay the recorded denoising of the focused (or last) answer |
| ctrl+up / ctrl+down | walk through the messages (Up / Down too, once one is focused; a click focuses one) |
| ctrl+y | copy the last (or the focused) answer |
| ctrl+shift+c | copy the next code block of the last (or focused) answer; again for the one after (a click on a code block copies it too) |
| ctrl+b | sampler panel (applies from the next turn, saved) |
| ctrl+t | thinking on/off for this conversation |
| ctrl+f | attach an image by path (→ completes the path) |
| ctrl+n | new conversation |
| ctrl+o | conversations (type to search; each shows its id, for `diffusion-chat replay ID`): open, new (ctrl+n), rename (ctrl+r), delete (ctrl+d), export (ctrl+e) |
| ctrl+l | choose or load a model |
| ctrl+p | command palette: system prompt, edit last message, revisions, themes, canvas mode, export, … |
| F1 | this help |
| ctrl+q | quit |
| ctrl+c | copy the selection; with nothing selected: cancel the answer being written, else ask to quit (ctrl+c again quits) |

On a focused message (yours or an answer):

| Key | Action |
|---|---|
| e | your message: edit it in the message box; Enter resends it as a new branch (the old one stays) |
| [ / ] | your message: previous / next branch · an answer: previous / next revision |
| y / c / r | an answer: copy it / its next code block / its reasoning |
| v | the last answer: revise mode, choose a span of it to write again in place |
| t | an answer: open / close its Thinking pane |

In **revise mode** (keys of their own; `r` there re-denoises instead of copying the reasoning):

| Key | Action |
|---|---|
| ← / → | move the cursor (ctrl or alt: by word; Home / End: to the ends) |
| shift+← / shift+→ | extend the selection (ctrl+shift or alt+shift: by word); a mouse drag over the text selects too |
| Enter, r | denoise the selected span again, everything around it fixed: a new revision of the answer |
| Esc | leave revise mode |

In the **replay view** (ctrl+r): ← / → step, space play / pause, [ / ] or PageUp / PageDown the previous /
next block, + / - speed, Home / End the first / last step, m candidates or noise, Esc closes. It draws the
recorded steps in the live canvas's colours, with each block's steps, stop reason and LLaDA-2.1 edits.

Commands typed in the message box (type `/` to list them, filtered as you type; Tab completes; a `/word` that
is no command asks before it is sent as text, and `//word` sends `/word` without asking): `/help` this help,
`/new`, `/chats`, `/model`, `/sampler`, `/thinking`, `/quit` as their keys do; `/image PATH` attaches an image (DiffusionGemma checkpoints with a
vision tower only; → or Tab completes the path, image files listed first; chips above the input show a
thumbnail, name, size and pixel size — click a chip to remove it). `/system TEXT` sets this conversation's
system prompt (shown above the first turn, sent through the chat template from the next answer on);
`/system` alone removes it. `/fill Text with ___ holes ___{3} in it.` answers with that text, only the holes
denoised (`___` or `[...]` is a hole of 8 tokens, `___{n}` of n; `\\___` stays text): the canvas shows the
given text dim and fixed while the holes resolve, and the transcript highlights what was filled in.

**Copying** goes to the system clipboard by the terminal's OSC 52 escape: it works in kitty, WezTerm,
Alacritty, foot, Windows Terminal, Ghostty, iTerm2 (allow "Applications in terminal may access clipboard"),
xterm (with `allowWindowOps`) and tmux (`set -g set-clipboard on`); GNOME Terminal and other VTE terminals
and macOS Terminal ignore it — select with the terminal's own modifier there (often shift+drag). Selecting
text in the transcript with the mouse copies it as soon as the button is released (ctrl+c copies it again).

**Under each answer**, one sparkline per committed block shows how many positions each denoising step
accepted (and, for LLaDA-2.1 token editing, "3 edits": positions it re-wrote; they flash reversed on the
canvas); the status bar shows the same for the block being denoised. The canvas's legend tells its colours.
Answers record their denoising for the replay view (`record_trajectories` and `trajectory_cap_mb` in the
settings file, or *Recording on/off* in the palette).

Conversations are saved in SQLite in your data folder; settings in `config.toml` in your config folder.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,q", "dismiss(None)", "Close")]

    def __init__(self):
        super().__init__(classes="dialog-screen")

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog", id="help"):
            yield Markdown(HELP)
