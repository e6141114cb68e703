"""The chat screen: transcript with the live canvas, prompt, attachments, sampler panel and status bar.

It renders and handles keys; the turn logic is `tui.chat_session.ChatSession`, for which this screen is the
`ChatView`. It never touches MLX: frames come from the backend's slot, read by the session on a 30 Hz timer
while an answer is being written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static

from engine.errors import EngineError, InputError
from engine.events import ModelInfo, Step
from engine.settings import Settings

from ..chat_session import ChatSession
from ..frame_pacer import FRAME_INTERVAL_S
from ..store import Conversation
from ..widgets.attachments import AttachmentBar, AttachmentsChanged, inspect_attachment
from ..widgets.canvas import TokenTexts
from ..widgets.messages import AssistantMessage, UserMessage
from ..widgets.prompt import IMAGE_COMMAND, PathSuggester, PromptInput
from ..widgets.sampler_panel import SamplerPanel
from ..widgets.status_bar import StatusBar
from ..widgets.token_count import TokenCount
from .dialogs import TextPromptScreen

# Counting waits this long after the last keystroke, so typing (or a huge paste) is counted once, not per key.
COUNT_DEBOUNCE_S = 0.3

WELCOME = (
    "Type a message and press Enter. The answer is denoised a block at a time: watch the canvas under it.\n"
    "F1 help · ctrl+b sampler · ctrl+t thinking · ctrl+f attach image · ctrl+l model · ctrl+p commands"
)


class ChatScreen(Screen):
    BINDINGS = [
        # Always listed: hiding it while idle would rebuild the footer at every answer's start and end.
        Binding("escape", "cancel_generation", "Cancel"),
        Binding("ctrl+b", "toggle_sampler", "Sampler"),
        Binding("ctrl+t", "toggle_thinking", "Thinking"),
        Binding("ctrl+f", "attach_image", "Image"),
        Binding("ctrl+n", "new_conversation", "New"),
        Binding("ctrl+o", "app.conversations", "Chats"),
        Binding("ctrl+l", "app.choose_model", "Model"),
        Binding("ctrl+y", "copy_answer", "Copy"),
        Binding("f1", "app.help", "Help"),
    ]

    def __init__(self, session: ChatSession):
        super().__init__()
        self.session = session
        self.token_texts: TokenTexts | None = None
        self.canvas_mode = "candidates"
        self.shown_model: ModelInfo | None = None
        self._count_timer = None
        self._count_request = 0     # the newest count asked for; older results are dropped

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="body"):
            with Vertical(id="chat"):
                with VerticalScroll(id="transcript"):
                    yield Static(WELCOME, id="welcome", markup=False)
                yield AttachmentBar(id="attachments")
                with Horizontal(id="prompt-row"):
                    yield PromptInput(id="prompt", placeholder="Message (Enter sends · /image PATH attaches an image)")
                    yield TokenCount(id="token-count")
            yield SamplerPanel(id="sampler")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "New conversation"
        self._frame_timer = self.set_interval(FRAME_INTERVAL_S, self.session.poll, pause=True)
        self.transcript.anchor()
        self.status_bar.set_thinking(self.session.think)
        self.prompt.focus()

    @property
    def prompt(self) -> PromptInput:
        return self.query_one(PromptInput)

    @property
    def status_bar(self) -> StatusBar:
        return self.query_one(StatusBar)

    @property
    def transcript(self) -> VerticalScroll:
        return self.query_one("#transcript", VerticalScroll)

    @property
    def attachments(self) -> AttachmentBar:
        return self.query_one(AttachmentBar)

    # ---- the loaded model (set by the app) --------------------------------------------------------------

    async def show_model(self, model: ModelInfo | None, settings: Settings, canvas_mode: str) -> None:
        """Show the loaded (or no) model and its family's sampler settings."""
        self.token_texts = TokenTexts(model.token_text) if model else None
        self.canvas_mode = canvas_mode
        self.status_bar.set_model(model.name if model else None, model.label if model else "")
        self.status_bar.set_activity("ready" if model else "choose a model (ctrl+l)")
        self.sub_title = f"{model.name} · {model.label}" if model else ""
        await self.query_one(SamplerPanel).show_settings(model.family if model else None, settings, canvas_mode,
                                                         dict(model.setting_defaults) if model else {},
                                                         model.offered_settings if model else None)
        self.recount()
        if model and not model.supports_images and self.attachments.attachments:
            self.notify(f"{model.name} is text-only: remove the image attachments before sending.",
                        severity="warning", markup=False)
        self.shown_model = model  # last: the screen now shows this model (its panel is rebuilt)

    def show_canvas_mode(self, mode: str) -> None:
        self.canvas_mode = mode
        self.query_one(SamplerPanel).show_canvas_mode(mode)

    def action_toggle_sampler(self) -> None:
        self.query_one(SamplerPanel).toggle_class("-open")

    # ---- ChatView: what the session asks for --------------------------------------------------------------

    async def show_turn(self, text: str, image_labels: Sequence[str]) -> AssistantMessage:
        for welcome in self.query("#welcome"):
            await welcome.remove()
        answer = AssistantMessage(live=True)
        await self.transcript.mount_all([UserMessage(text, list(image_labels)), answer])
        self.attachments.clear()
        return answer

    async def add_text(self, answer: AssistantMessage, content: str, reasoning: str) -> None:
        await answer.add_block(content, reasoning)

    def show_frame(self, answer: AssistantMessage, step: Step, total_blocks: int | None) -> None:
        answer.show_frame(step, self.token_texts, self.canvas_mode, total_blocks)

    def show_canvas_note(self, answer: AssistantMessage, text: str) -> None:
        answer.show_canvas_note(text)

    async def finish_answer(self, answer: AssistantMessage, status: str, note: str) -> None:
        answer.finish(status, note)
        self.recount()

    async def show_conversation(self, conversation: Conversation | None) -> None:
        await self.transcript.remove_children()
        self.attachments.clear()
        if conversation is None:
            await self.transcript.mount(Static(WELCOME, id="welcome", markup=False))
            self.prompt.set_history([])
        else:
            widgets = []
            for message in conversation.messages:
                if message.role == "user":
                    widgets.append(UserMessage(message.content, [Path(path).name for path in message.images]))
                elif message.role == "assistant":
                    note = "⚠ the answer failed" if message.status == "error" else ""
                    widgets.append(AssistantMessage(message.content, message.reasoning, message.status, note))
            await self.transcript.mount_all(widgets)
            self.prompt.set_history([m.content for m in conversation.messages if m.role == "user"])
            self.transcript.scroll_end(animate=False)
        self.prompt.focus()
        self.recount()

    def set_live(self, live: bool) -> None:
        if live:
            self._frame_timer.resume()
        else:
            self._frame_timer.pause()

    def show_activity(self, text: str) -> None:
        self.status_bar.set_activity(text)

    def show_thinking(self, on: bool) -> None:
        self.status_bar.set_thinking(on)
        self.recount()

    def show_title(self, title: str) -> None:
        self.title = title

    def notify(self, message: str, severity: str = "information", **options) -> None:
        # Model output and file names are never markup.
        options.setdefault("markup", False)
        super().notify(message, severity=severity, **options)

    # ---- the prompt's token count ----------------------------------------------------------------------

    @property
    def token_count(self) -> TokenCount:
        return self.query_one(TokenCount)

    @on(Input.Changed, "#prompt")
    @on(AttachmentsChanged)
    def recount(self) -> None:
        """Count the next turn's prompt (history + what is typed + attachments) once typing pauses."""
        if self._count_timer is not None:
            self._count_timer.stop()
        self._count_timer = self.set_timer(COUNT_DEBOUNCE_S, self._count_now)

    def _count_now(self) -> None:
        model = self.session.model
        if model is None or model.count_tokens is None or not model.context_length:
            self.token_count.show(None, None)
            return
        self._count_request += 1
        messages = self.session.draft_messages(self.prompt.value, [a.path for a in self.attachments.attachments])
        self._count_in_thread(model, messages, self.session.think, self._count_request)

    @work(thread=True, exclusive=True, group="token-count")
    def _count_in_thread(self, model: ModelInfo, messages: list[dict], think: bool, request: int) -> None:
        """The tokenizer runs here, never on the UI thread (a pasted book takes seconds to tokenize)."""
        try:
            tokens = model.count_tokens(messages, think)
        except EngineError:
            tokens = None  # e.g. nothing typed yet in a new conversation: the template has no user turn
        try:
            self.app.call_from_thread(self._show_count, model, tokens, request)
        except RuntimeError:
            pass  # the app closed while counting

    def _show_count(self, model: ModelInfo, tokens: int | None, request: int) -> None:
        if request != self._count_request or model is not self.session.model:
            return  # a newer count is on its way, or the model changed
        if tokens is None and not self.prompt.value.strip() and not self.session.history:
            tokens = 0
        over = tokens is not None and self.session.context_verdict(model, tokens) is not None
        self.token_count.show(tokens, model.context_length, over)

    # ---- keys and the prompt ----------------------------------------------------------------------------

    @on(Input.Submitted, "#prompt")
    async def _prompt_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if text == IMAGE_COMMAND.strip() or text.startswith(IMAGE_COMMAND):
            if self.attach(text[len(IMAGE_COMMAND.strip()):].strip()):
                self.prompt.value = ""
            return
        if text and await self.send(text):
            self.prompt.remember(text)
            self.prompt.value = ""

    async def send(self, text: str) -> bool:
        attachments = self.attachments.attachments
        return await self.session.send(text, [a.path for a in attachments], [a.label for a in attachments])

    def action_cancel_generation(self) -> None:
        self.session.cancel()

    async def action_new_conversation(self) -> None:
        await self.session.open(None)

    def action_toggle_thinking(self) -> None:
        self.session.toggle_thinking()

    def action_attach_image(self) -> None:
        self.app.push_screen(
            TextPromptScreen("Attach an image", placeholder="path to a PNG, JPEG, WebP, … file",
                             suggester=PathSuggester(), hint="→ completes the path · Enter attaches · Esc cancels"),
            lambda path: self.attach(path) if path else None,
        )

    def attach(self, path: str) -> bool:
        """Check and attach an image; every refusal is one notice and nothing is attached."""
        if not path:
            self.notify("Give a path: /image PATH", severity="warning")
            return False
        model = self.session.model
        if model is not None and not model.supports_images:
            self.notify(f"{model.name} is text-only and cannot read images.", severity="error")
            return False
        try:
            attachment = inspect_attachment(path, model.image_budget if model is not None else None)
        except InputError as exc:
            self.notify(str(exc), severity="error")
            return False
        if not self.attachments.add(attachment):
            self.notify(f"{attachment.name} is already attached.")
        return True

    def action_copy_answer(self) -> None:
        if not self.session.last_answer:
            self.notify("There is no answer to copy yet.")
            return
        self.app.copy_to_clipboard(self.session.last_answer)
        self.notify("Copied the last answer to the clipboard.")
