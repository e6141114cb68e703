"""The scrolling transcript: the system prompt above the first turn, then the turns of the shown path, the focus
walk between them (ctrl+up / ctrl+down, or Up / Down on a focused turn), and typing that lands here sent on to the
message box."""

from __future__ import annotations

from typing import Mapping, Sequence

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static


from ..records import Conversation, Message, Place
from .answer_text import SpanSelector
from .example_prompts import ExamplePrompts
from .messages import AssistantMessage, UserMessage
from .printable import flowing

WELCOME = (
    "Type a message and press Enter (ctrl+j: a new line). The answer is denoised a block at a time: watch the "
    "canvas under it.\n"
    "F1 help · ctrl+g regenerate · ctrl+k compare · ctrl+r replay · ctrl+b sampler · ctrl+t thinking · ctrl+f image · "
    "ctrl+p commands\n"
    "/ lists the commands (/fill Text with ___ holes fills the blanks, /system, /image, /help) · v on a focused "
    "answer (ctrl+up) revises a span of it · ctrl+o continues a saved conversation"
)


class SystemPromptView(Vertical):
    """The conversation's system prompt, above its first turn."""

    DEFAULT_CSS = """
    SystemPromptView {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: outer $secondary 50%;
        color: $text-muted;
    }
    SystemPromptView > .role {
        text-style: bold italic;
    }
    """

    def __init__(self, text: str):
        super().__init__(id="system-prompt")
        self.text = text

    def compose(self) -> ComposeResult:
        yield Static("System prompt  (ctrl+p → System prompt, or /system TEXT)", classes="role", markup=False)
        yield Static(flowing(self.text), classes="system-text", markup=False)

    def update(self, text: str) -> None:
        self.text = text
        self.query_one(".system-text", Static).update(flowing(text))


class Transcript(VerticalScroll):
    BINDINGS = [
        Binding("up", "walk(-1)", "Previous message", show=False),
        Binding("down", "walk(1)", "Next message", show=False),
    ]

    examples: tuple[str, ...] = ()   # the loaded demo's example prompts, shown in the empty chat

    def compose(self) -> ComposeResult:
        yield Static(WELCOME, id="welcome", markup=False)
        yield ExamplePrompts(self.examples)

    async def show_examples(self, prompts: Sequence[str]) -> None:
        self.examples = tuple(prompts)
        for old in self.query(ExamplePrompts):
            await old.remove()
        if self.query("#welcome"):
            await self.mount(ExamplePrompts(self.examples), after="#welcome")

    @property
    def turns(self) -> list[UserMessage | AssistantMessage]:
        return list(self.query("UserMessage, AssistantMessage"))

    async def show(self, conversation: Conversation | None, places: Mapping[int, Place]) -> None:
        """The conversation's path (None: the welcome text)."""
        await self.remove_children()
        if conversation is None:
            await self.mount_all([Static(WELCOME, id="welcome", markup=False), ExamplePrompts(self.examples)])
            return
        widgets: list[Widget] = []
        if conversation.system_prompt:
            widgets.append(SystemPromptView(conversation.system_prompt))
        for message in conversation.messages:
            if message.role == "user":
                widgets.append(UserMessage.saved(message, places.get(message.id)))
            elif message.role == "assistant":
                widgets.append(AssistantMessage.saved(message, places.get(message.id)))
        await self.mount_all(widgets)
        self.scroll_end(animate=False)

    async def add_user(self, message: Message, image_labels: Sequence[str], place: Place) -> None:
        await self.query("#welcome, #examples").remove()   # the empty chat's text and example prompts
        await self.mount(UserMessage(message.content, message.images, image_labels, place))

    async def add_answer(self) -> AssistantMessage:
        answer = AssistantMessage(live=True)
        await self.mount(answer)
        return answer

    def answer(self, message_id: int) -> AssistantMessage | None:
        return next((a for a in self.query(AssistantMessage) if a.message_id == message_id), None)

    def turn(self, message_id: int) -> UserMessage | AssistantMessage | None:
        return next((t for t in self.turns if t.message_id == message_id), None)

    def last_answer(self) -> AssistantMessage | None:
        answers = self.query(AssistantMessage)
        return answers.last() if answers else None

    def show_system_prompt(self, text: str | None) -> None:
        """Show, change or remove the system prompt above the first turn (the mounts are not awaited: nothing
        below depends on them)."""
        shown = self.query(SystemPromptView)
        if text and shown:
            shown.first().update(text)
        elif text:
            self.mount(SystemPromptView(text), before=0 if self.children else None)
        else:
            shown.remove()

    def walk(self, delta: int, current: Widget | None) -> bool:
        """Focus the turn `delta` away from `current` (from outside the transcript: the last turn going up);
        False when there is none that way."""
        turns = self.turns
        if not turns:
            return False
        index = turns.index(current) + delta if current in turns else (len(turns) - 1 if delta < 0 else len(turns))
        if not 0 <= index < len(turns):
            return False
        turns[index].focus()
        return True

    def action_walk(self, delta: int) -> None:
        focused = self.screen.focused
        if focused in self.turns:
            if not self.walk(delta, focused) and delta > 0:
                self.screen.focus_prompt()  # down past the last turn: back to typing
        else:
            self.scroll_relative(y=delta)

    def on_key(self, event: events.Key) -> None:
        """A character typed after a click or Tab into the transcript goes to the message box, where the person
        meant it, instead of vanishing. Keys a focused turn binds (v, y, e, [ ...) keep their meaning: bindings
        are looked up only after the key has bubbled up here, so those are left alone. The focus is not asked
        where the key came from: a burst of typing is queued at the turn before the first key moves the focus,
        and the rest must follow it (only revise mode's span selector reads keys of its own)."""
        if isinstance(self.screen.focused, SpanSelector):
            return
        if event.is_printable and event.character and event.key not in self.screen.active_bindings:
            event.stop()
            self.screen.focus_prompt(event.character)
