"""The chat screen's prompt handling (a mixin of `ChatScreen`): what Enter does with the text — send it, resend
an edited earlier message, the slash commands of `tui.slash_commands` (an unknown one asks first), with their
menu shown while one is typed — the image
attachments, the `/image` path completions, and editing an earlier message in the prompt.

Its handlers follow Textual's naming convention (`on_<widget>_<message>`), which works from a mixin.
"""

from __future__ import annotations

from textual.widgets import Static, TextArea

from engine.errors import InputError

from ..slash_commands import BY_NAME, split_command

from ..widgets.attachments import inspect_attachment
from ..widgets.messages import UserMessage
from ..widgets.prompt import FILL_COMMAND, IMAGE_COMMAND, SYSTEM_COMMAND, PathSuggester, PromptInput
from ..widgets.slash_menu import SlashMenu
from .dialogs import ConfirmScreen, TextPromptScreen

EDIT_BANNER = ("Editing an earlier message: Enter sends it as a new branch from there (the old branch stays; "
               "[ and ] on the message switch between them) · Esc stops editing")
COMPLETIONS_SHOWN = 12


class PromptCommands:
    async def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
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
        if command is None or (command.action and rest):
            self._ask_before_sending(word, text)
        elif command.action:
            self.prompt.value = ""
            await self.run_action(command.action)
        elif command.name == IMAGE_COMMAND.strip():
            if self.attach(rest):
                self.prompt.value = ""
        elif command.name == SYSTEM_COMMAND:
            self.session.set_system_prompt(rest)
            self.prompt.value = ""
        elif command.name == FILL_COMMAND and await self.send_fill(rest):
            self.prompt.remember(text)
            self.prompt.value = ""

    async def _send_text(self, text: str) -> None:
        if text and await self.send(text):
            self.prompt.remember(text)
            self.prompt.value = ""

    def _ask_before_sending(self, word: str, text: str) -> None:
        """A slash word that is no command (a typo, or a path): sent as a message only once confirmed."""
        async def answered(send: bool | None) -> None:
            if send:
                await self._send_text(text)
            else:
                self.prompt.focus()

        self.app.push_screen(ConfirmScreen(f"{word} is not a command (type / to list them). Send the message "
                                           "to the model as text?", confirm_label="Send as text"), answered)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area is self.prompt:
            self.query_one(SlashMenu).follow(self.prompt.value, self.unavailable_commands())

    def unavailable_commands(self) -> dict[str, str]:
        refused = self.images_refused()
        return {IMAGE_COMMAND.strip(): refused} if refused else {}

    async def send(self, text: str) -> bool:
        """Send the prompt's text with the attachments: a new turn, or the edit of an earlier message."""
        attachments = self.attachments.attachments
        paths, labels = [a.path for a in attachments], [a.label for a in attachments]
        if self.editing is not None:
            return await self.session.resend(self.editing.message_id, text, paths, labels)
        return await self.session.send(text, paths, labels)

    async def send_fill(self, text: str) -> bool:
        """`/fill TEXT`: a new turn answered by TEXT with its holes filled."""
        if self.editing is not None:
            self.notify("A template is sent as a new turn: stop editing first (Esc).", severity="warning")
            return False
        if self.attachments.attachments:
            self.notify("A template's turn takes no images: remove the chips first.", severity="warning")
            return False
        return await self.session.send_fill(text)

    # ---- editing an earlier message --------------------------------------------------------------------

    def on_user_message_edit_requested(self, event: UserMessage.EditRequested) -> None:
        event.stop()
        if self.session.generation is not None:
            self.notify("An answer is being written: edit when it is done (Esc cancels it).", severity="warning")
            return
        self.editing = event.widget
        banner = self.query_one("#edit-banner", Static)
        banner.update(EDIT_BANNER)
        banner.display = True
        self.prompt.value = event.widget.content
        self.attachments.clear()
        for path in event.widget.images:  # sent again with the edit unless removed
            self.attach(path)
        self.prompt.focus()

    def action_edit_last_message(self) -> None:
        users = [turn for turn in self.transcript.turns if isinstance(turn, UserMessage) and turn.message_id]
        if not users:
            self.notify("There is no sent message to edit yet.")
            return
        users[-1].action_edit()

    def stop_editing(self, clear: bool = False) -> None:
        if self.editing is None:
            return
        self.editing = None
        self.query_one("#edit-banner", Static).display = False
        if clear:
            self.prompt.value = ""
            self.attachments.clear()

    # ---- images ------------------------------------------------------------------------------------------

    def on_prompt_input_completions(self, event: PromptInput.Completions) -> None:
        event.stop()
        names = event.names
        listed = "  ".join(names[:COMPLETIONS_SHOWN])
        if len(names) > COMPLETIONS_SHOWN:
            listed += f"  … {len(names) - COMPLETIONS_SHOWN} more"
        completions = self.query_one("#completions", Static)
        completions.update(listed + ("   (→ or Tab completes)" if names else ""))
        completions.display = bool(names)

    def images_refused(self) -> str | None:
        """Why no image can be attached now (a text-only model), or None."""
        model = self.session.model
        if model is not None and not model.supports_images:
            return f"{model.name} is text-only and cannot read images."
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # None: shown disabled in the footer (its tooltip says why), and the key does nothing.
        if action == "attach_image" and self.images_refused():
            return None
        return super().check_action(action, parameters)

    def action_attach_image(self) -> None:
        refused = self.images_refused()
        if refused:   # (the palette can still call it) before any path is asked for
            self.notify(refused, severity="warning")
            return
        self.app.push_screen(
            TextPromptScreen("Attach an image", placeholder="path to a PNG, JPEG, WebP, … file",
                             suggester=PathSuggester(), hint="→ completes the path · Enter attaches · Esc cancels"),
            lambda path: self.attach(path) if path else None,
        )

    def attach(self, path: str) -> bool:
        """Check and attach an image; every refusal is one notice and nothing is attached."""
        refused = self.images_refused()
        if refused:
            self.notify(refused, severity="error")
            return False
        if not path:
            self.notify("Give a path: /image PATH", severity="warning")
            return False
        model = self.session.model
        try:
            attachment = inspect_attachment(path, model.image_budget if model is not None else None)
        except InputError as exc:
            self.notify(str(exc), severity="error")
            return False
        if not self.attachments.add(attachment):
            self.notify(f"{attachment.name} is already attached.")
        return True

    # ---- the system prompt -------------------------------------------------------------------------------

    def action_system_prompt(self) -> None:
        self.app.push_screen(
            TextPromptScreen("System prompt for this conversation", value=self.session.system_prompt or "",
                             placeholder="e.g. You are a terse assistant. (empty: none)",
                             hint="Enter sets it (from the next answer) · empty removes it · Esc cancels · "
                                  "several lines: /system TEXT in the message box", allow_empty=True),
            lambda text: self.session.set_system_prompt(text) if text is not None else None,
        )
