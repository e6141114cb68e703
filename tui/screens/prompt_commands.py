"""The chat screen's prompt handling (`ChatScreen` delegates to it): what Enter does with the text — send it,
resend an edited earlier message, the slash commands of `tui.slash_commands` (an unknown one asks first), with
their menu shown while one is typed — the image attachments, the `/image` path completions, and editing an
earlier message in the prompt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Static

from engine.errors import InputError

from ..slash_commands import BY_NAME, split_command
from ..widgets.attachments import inspect_attachment
from ..widgets.messages import UserMessage
from ..widgets.prompt import FILL_COMMAND, IMAGE_COMMAND, SYSTEM_COMMAND, PathSuggester, PromptInput
from ..widgets.sampler_panel import SamplerPanel
from ..widgets.slash_menu import SlashMenu
from .dialogs import ConfirmScreen, TextPromptScreen

EDIT_BANNER = ("Editing an earlier message: Enter sends it as a new branch from there (the old branch stays; "
               "[ and ] on the message switch between them) · Esc stops editing")
COMPLETIONS_SHOWN = 12

if TYPE_CHECKING:
    from .chat import ChatScreen


class PromptCommands:
    def __init__(self, screen: "ChatScreen"):
        self.screen = screen

    async def submitted(self, event: PromptInput.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if text == "/":
            return   # the menu lists the commands; a lone slash is not a message
        split = split_command(text)
        if split is None:
            await self._send_text(text[1:] if text.startswith("//") else text)
            return
        word, rest = split
        command = BY_NAME.get(word.lower())
        prompt = self.screen.prompt
        if command is None or (command.action and rest):
            self._ask_before_sending(word, text)
        elif command.action:
            prompt.value = ""
            await self.screen.run_action(command.action)
        elif command.name == IMAGE_COMMAND.strip():
            if self.attach(rest):
                prompt.value = ""
        elif command.name == SYSTEM_COMMAND:
            self.screen.session.set_system_prompt(rest)
            prompt.value = ""
        elif command.name == FILL_COMMAND and await self.send_fill(rest):
            prompt.remember(text)
            prompt.value = ""

    async def _send_text(self, text: str) -> None:
        if text and await self.send(text):
            self.screen.prompt.remember(text)
            self.screen.prompt.value = ""

    def _ask_before_sending(self, word: str, text: str) -> None:
        """A slash word that is no command (a typo, or a path): sent as a message only once confirmed."""
        async def answered(send: bool | None) -> None:
            if send:
                await self._send_text(text)
            else:
                self.screen.prompt.focus()

        self.screen.app.push_screen(ConfirmScreen(f"{word} is not a command (type / to list them). Send the "
                                                  "message to the model as text?", confirm_label="Send as text"),
                                    answered)

    def text_changed(self) -> None:
        """The prompt's text changed: the slash menu follows it."""
        self.screen.query_one(SlashMenu).follow(self.screen.prompt.value, self.unavailable_commands())

    def unavailable_commands(self) -> dict[str, str]:
        refused = self.images_refused()
        return {IMAGE_COMMAND.strip(): refused} if refused else {}

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

    def images_refused(self) -> str | None:
        """Why no image can be attached now (a text-only model), or None."""
        model = self.screen.session.model
        if model is not None and not model.supports_images:
            return f"{model.name} is text-only and cannot read images."
        return None

    def attach_image(self) -> None:
        refused = self.images_refused()
        if refused:   # (the palette can still call it) before any path is asked for
            self.screen.notify(refused, severity="warning")
            return
        self.screen.app.push_screen(
            TextPromptScreen("Attach an image", placeholder="path to a PNG, JPEG, WebP, … file",
                             suggester=PathSuggester(), hint="→ completes the path · Enter attaches · Esc cancels"),
            lambda path: self.attach(path) if path else None,
        )

    def attach(self, path: str) -> bool:
        """Check and attach an image; every refusal is one notice and nothing is attached."""
        refused = self.images_refused()
        if refused:
            self.screen.notify(refused, severity="error")
            return False
        if not path:
            self.screen.notify("Give a path: /image PATH", severity="warning")
            return False
        model = self.screen.session.model
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
