"""Transcript entries: a user turn, and an assistant turn with its thinking pane and live canvas."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Collapsible, Markdown, Static

from engine.events import Step

from .canvas import CanvasMode, DenoisingCanvas, TokenTexts
from .printable import flowing


class UserMessage(Vertical):

    DEFAULT_CSS = """
    UserMessage {
        height: auto;
        margin: 1 0 0 0;
    }
    UserMessage .role {
        text-style: bold;
        color: $primary;
    }
    UserMessage .user-text {
        padding: 0 1;
    }
    UserMessage .user-images {
        padding: 0 1;
        color: $text-muted;
    }
    """
    def __init__(self, content: str, image_labels: list[str] | tuple[str, ...] = ()):
        super().__init__(classes="message user-message")
        self.content = content
        self.image_labels = list(image_labels)

    def compose(self) -> ComposeResult:
        yield Static("You", classes="role")
        yield Static(flowing(self.content), markup=False, classes="user-text")
        if self.image_labels:
            labels = "  ".join(f"🖼 {label}" for label in self.image_labels)
            yield Static(labels, markup=False, classes="user-images")


class AssistantMessage(Vertical):
    """An answer: committed text lands here block by block; while a block denoises, the canvas below shows it.

    Reasoning goes into a collapsible pane above the answer, open while it streams and collapsed as soon
    as the answer starts.
    """

    DEFAULT_CSS = """
    AssistantMessage {
        height: auto;
        margin: 1 0 0 0;
    }
    AssistantMessage .role {
        text-style: bold;
        color: $secondary;
    }
    AssistantMessage #answer {
        margin: 0;
        padding: 0 1;
        background: transparent;
    }
    AssistantMessage #thinking {
        margin: 0 1;
        padding: 0;
        background: transparent;
        border-top: none;
        color: $text-muted;
    }
    AssistantMessage #reasoning {
        margin: 0;
        padding: 0 1;
        background: transparent;
        color: $text-muted;
    }
    AssistantMessage #note {
        padding: 0 1;
        color: $text-muted;
    }
    AssistantMessage.-cancelled #note {
        color: $warning;
    }
    AssistantMessage.-error #note {
        color: $error;
    }
    """

    def __init__(self, content: str = "", reasoning: str = "", status: str = "complete", note: str = "",
                 live: bool = False):
        status_class = {"cancelled": " -cancelled", "error": " -error"}.get(status, "")
        super().__init__(classes="message assistant-message" + status_class)
        self.content = content
        self.reasoning = reasoning
        self.status = status
        self._note = note
        # A saved answer is finished; a live one finishes with `finish()`.
        self.finished = not live

    def compose(self) -> ComposeResult:
        yield Static("Assistant", classes="role")
        with Collapsible(title="Thinking", collapsed=bool(self.content), id="thinking") as thinking:
            yield Markdown(flowing(self.reasoning), id="reasoning")
        thinking.display = bool(self.reasoning)
        yield Markdown(flowing(self.content), id="answer")
        yield DenoisingCanvas(id="canvas")
        note = Static(self._note or _status_note(self.status), markup=False, id="note")
        note.display = bool(note.content)
        yield note

    @property
    def canvas(self) -> DenoisingCanvas:
        return self.query_one(DenoisingCanvas)

    @property
    def thinking(self) -> Collapsible:
        return self.query_one("#thinking", Collapsible)

    def show_frame(self, step: Step, token_texts: TokenTexts, mode: CanvasMode, total_blocks: int | None) -> None:
        self.canvas.show(step, token_texts, mode, total_blocks)

    def show_canvas_note(self, text: str) -> None:
        self.canvas.show_note(text)

    async def add_block(self, content_delta: str, reasoning_delta: str) -> None:
        """Append one committed block; clears the canvas (its block is now text)."""
        self.canvas.clear()
        answer_started = bool(self.content or content_delta)
        # Text first, rendering second: a frame drawn while the Markdown renders must already see this block.
        self.reasoning += reasoning_delta
        self.content += content_delta
        if reasoning_delta:
            self.thinking.display = True
        if self.thinking.display:
            self.thinking.collapsed = answer_started
        if reasoning_delta:
            await self.query_one("#reasoning", Markdown).append(flowing(reasoning_delta))
        if content_delta:
            await self.query_one("#answer", Markdown).append(flowing(content_delta))

    def finish(self, status: str, note: str = "") -> None:
        """End of generation: 'complete', 'cancelled' (committed blocks stay) or 'error' with its message."""
        self.canvas.hide()
        self.status = status
        self.finished = True
        self.thinking.collapsed = bool(self.content) or not self.reasoning
        text = note or _status_note(status)
        note_widget = self.query_one("#note", Static)
        note_widget.update(text)
        note_widget.display = bool(text)
        self.set_class(status == "cancelled", "-cancelled")
        self.set_class(status == "error", "-error")


def _status_note(status: str) -> str:
    if status == "cancelled":
        return "⏹ cancelled: the blocks committed before Esc are kept"
    return ""
