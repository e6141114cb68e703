"""The chat screen's prompt handling (`ChatScreen` delegates to it): what Enter does with the text — send it,
resend an edited earlier message, `/image PATH`, `/system TEXT`, `/fill TEXT with ___ holes` — the image
attachments, the `/image` path completions, and editing an earlier message in the prompt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Static

from engine.errors import InputError

from ..widgets.attachments import inspect_attachment
from ..widgets.messages import UserMessage
from ..widgets.prompt import FILL_COMMAND, IMAGE_COMMAND, SYSTEM_COMMAND, PathSuggester, PromptInput
from ..widgets.sampler_panel import SamplerPanel
from .dialogs import TextPromptScreen

EDIT_BANNER = ("Editing an earlier message: Enter sends it as a new branch from there (the old branch stays; "
               "[ and ] on the message switch between them) · Esc stops editing")
COMPLETIONS_SHOWN = 12

if TYPE_CHECKING:
    from .chat import ChatScreen


def _command(text: str, name: str) -> str | None:
    """What follows `/name` (a space or a newline apart), or None if the text is not that command."""
    name = name.strip()
    if text == name:
        return ""
    if text.startswith(name) and text[len(name)].isspace():
        return text[len(name):].strip()
    return None


class PromptCommands:
    def __init__(self, screen: "ChatScreen"):
        self.screen = screen

    async def submitted(self, event: PromptInput.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        image = _command(text, IMAGE_COMMAND)
        if image is not None:
            if self.attach(image):
                self.screen.prompt.value = ""
            return
        system = _command(text, SYSTEM_COMMAND)
        if system is not None:
            self.screen.session.set_system_prompt(system)
            self.screen.prompt.value = ""
            return
        fill = _command(text, FILL_COMMAND)
        if fill is not None:
            if await self.send_fill(fill):
                self.screen.prompt.remember(text)
                self.screen.prompt.value = ""
            return
        if text and await self.send(text):
            self.screen.prompt.remember(text)
            self.screen.prompt.value = ""

    async def send(self, text: str) -> bool:
        """Send the prompt's text with the attachments: a new turn, or the edit of an earlier message."""
        attachments = self.screen.attachments.attachments
        paths, labels = [a.path for a in attachments], [a.label for a in attachments]
        if self.screen.editing is not None:
            sent = await self.screen.session.resend(self.screen.editing.message_id, text, paths, labels)
        else:
            sent = await self.screen.session.send(text, paths, labels)
        if sent:
            self.say_unused_values()
        return sent

    def say_unused_values(self) -> None:
        """A turn sent while a sampler field holds an invalid value: say which value it used instead."""
        unused = self.screen.query_one(SamplerPanel).unused_values()
        if unused:
            self.screen.notify("Sent with the last valid settings — " + "; ".join(unused) +
                               " (fix it in the sampler panel, ctrl+b).", severity="warning", timeout=10)

    async def send_fill(self, text: str) -> bool:
        """`/fill TEXT`: a new turn answered by TEXT with its holes filled."""
        if self.screen.editing is not None:
            self.screen.notify("A template is sent as a new turn: stop editing first (Esc).", severity="warning")
            return False
        if self.screen.attachments.attachments:
            self.screen.notify("A template's turn takes no images: remove the chips first.", severity="warning")
            return False
        return await self.screen.session.send_fill(text)

    # ---- editing an earlier message --------------------------------------------------------------------

    def edit_requested(self, event: UserMessage.EditRequested) -> None:
        event.stop()
        if self.screen.session.generation is not None:
            self.screen.notify("An answer is being written: edit when it is done (Esc cancels it).",
                               severity="warning")
            return
        self.screen.editing = event.widget
        banner = self.screen.query_one("#edit-banner", Static)
        banner.update(EDIT_BANNER)
        banner.display = True
        self.screen.prompt.value = event.widget.content
        self.screen.attachments.clear()
        for path in event.widget.images:  # sent again with the edit unless removed
            self.attach(path)
        self.screen.prompt.focus()

    def edit_last_message(self) -> None:
        users = [turn for turn in self.screen.transcript.turns if isinstance(turn, UserMessage) and turn.message_id]
        if not users:
            self.screen.notify("There is no sent message to edit yet.")
            return
        users[-1].action_edit()

    def stop_editing(self, clear: bool = False) -> None:
        if self.screen.editing is None:
            return
        self.screen.editing = None
        self.screen.query_one("#edit-banner", Static).display = False
        if clear:
            self.screen.prompt.value = ""
            self.screen.attachments.clear()

    # ---- images ------------------------------------------------------------------------------------------

    def completions(self, event: PromptInput.Completions) -> None:
        event.stop()
        names = event.names
        listed = "  ".join(names[:COMPLETIONS_SHOWN])
        if len(names) > COMPLETIONS_SHOWN:
            listed += f"  … {len(names) - COMPLETIONS_SHOWN} more"
        completions = self.screen.query_one("#completions", Static)
        completions.update(listed + ("   (→ or Tab completes)" if names else ""))
        completions.display = bool(names)

    def attach_image(self) -> None:
        self.screen.app.push_screen(
            TextPromptScreen("Attach an image", placeholder="path to a PNG, JPEG, WebP, … file",
                             suggester=PathSuggester(), hint="→ completes the path · Enter attaches · Esc cancels"),
            lambda path: self.attach(path) if path else None,
        )

    def attach(self, path: str) -> bool:
        """Check and attach an image; every refusal is one notice and nothing is attached."""
        if not path:
            self.screen.notify("Give a path: /image PATH", severity="warning")
            return False
        model = self.screen.session.model
        if model is not None and not model.supports_images:
            self.screen.notify(f"{model.name} is text-only and cannot read images.", severity="error")
            return False
        try:
            attachment = inspect_attachment(path, model.image_budget if model is not None else None)
        except InputError as exc:
            self.screen.notify(str(exc), severity="error")
            return False
        if not self.screen.attachments.add(attachment):
            self.screen.notify(f"{attachment.name} is already attached.")
        return True

    # ---- the system prompt -------------------------------------------------------------------------------

    def system_prompt(self) -> None:
        self.screen.app.push_screen(
            TextPromptScreen("System prompt for this conversation", value=self.screen.session.system_prompt or "",
                             placeholder="e.g. You are a terse assistant. (empty: none)",
                             hint="Enter sets it (from the next answer) · empty removes it · Esc cancels · "
                                  "several lines: /system TEXT in the message box", allow_empty=True),
            lambda text: self.screen.session.set_system_prompt(text) if text is not None else None,
        )
