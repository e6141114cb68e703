"""Transcript entries: a user turn (`user_message`), and an assistant turn with its thinking pane, live canvas
and per-block sparklines.

Saved turns can take the focus (click, or ctrl+up from the prompt): a focused user message is edited with `e`
and switches between its branches with `[` / `]`; a focused answer switches revisions with `[` / `]`, copies
itself (`y`), its next code block (`c`) or its reasoning (`r`), and `v` enters revise mode, where a span of it
is chosen and written again (the `SpanSelector` has its own keys: there `r` re-denoises). They post
messages; the chat screen acts.

A `/fill` answer, or one whose span was written again, shows as plain text with its filled spans highlighted
(`FilledText`): Markdown rendering would move the characters the spans point at.
"""

from __future__ import annotations

from typing import Sequence

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message as TextualMessage
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownFence

from engine.events import Step


from ..fences import Fence, code_fences
from ..records import Message, Place
from .answer_text import FilledText, SpanSelector
from .block_steps import BlockSteps, shown_blocks, shown_edits
from ..config import CanvasMode
from .canvas import DenoisingCanvas, TokenTexts
from .printable import flowing
from .user_message import MESSAGE_CSS, UserMessage, role_line

__all__ = ["AssistantMessage", "UserMessage", "role_line"]


class AssistantMessage(Vertical, can_focus=True):
    """An answer: committed text lands here block by block; while a block denoises, the canvas below shows it.

    Reasoning goes into a collapsible pane above the answer, open while it streams and collapsed as soon
    as the answer starts. Under the answer, one sparkline per committed block.
    """

    DEFAULT_CSS = f"""
    AssistantMessage {{{MESSAGE_CSS}}}
    AssistantMessage .role {{
        text-style: bold;
        color: $secondary;
    }}
    AssistantMessage #answer {{
        margin: 0;
        padding: 0 1;
        background: transparent;
    }}
    AssistantMessage #answer MarkdownFence.-copied {{
        border-left: outer $success;
    }}
    AssistantMessage #thinking {{
        margin: 0 1;
        padding: 0;
        background: transparent;
        border-top: none;
        color: $text-muted;
    }}
    AssistantMessage #reasoning {{
        margin: 0;
        padding: 0 1;
        background: transparent;
        color: $text-muted;
    }}
    AssistantMessage #note {{
        padding: 0 1;
        color: $text-muted;
    }}
    AssistantMessage.-cancelled #note {{
        color: $warning;
    }}
    AssistantMessage.-error #note {{
        color: $error;
    }}
    """

    BINDINGS = [
        Binding("left_square_bracket", "revision(-1)", "Prev revision"),
        Binding("right_square_bracket", "revision(1)", "Next revision"),
        Binding("y", "copy('answer')", "Copy"),
        Binding("c", "copy('code')", "Copy code"),
        Binding("r", "copy('reasoning')", "Copy reasoning", show=False),
        Binding("v", "revise", "Revise a span"),
        Binding("t", "toggle_thinking_pane", "Thinking pane", show=False),
    ]

    class RevisionRequested(TextualMessage):
        def __init__(self, message_id: int, delta: int):
            super().__init__()
            self.message_id, self.delta = message_id, delta

    class ReviseRequested(TextualMessage):
        """Revise mode on this answer, if the session allows it (the chat screen asks it, then `enter_revise`)."""

        def __init__(self, widget: "AssistantMessage"):
            super().__init__()
            self.widget = widget

    class CopyRequested(TextualMessage):
        """Copy `text`; `what` says what it is, for the notice."""

        def __init__(self, text: str, what: str):
            super().__init__()
            self.text, self.what = text, what

    def __init__(self, content: str = "", reasoning: str = "", status: str = "complete", note: str = "",
                 live: bool = False, place: Place | None = None, blocks: Sequence[Sequence[int]] = (),
                 filled_spans: Sequence[Sequence[int]] | None = None, edits: Sequence[int] = ()):
        super().__init__(classes="message assistant-message")
        self.content = content
        self.reasoning = reasoning
        self.status = status
        self.place = place
        self._note = note
        self._blocks, self._edits = blocks, edits
        # A template's answer (None: an ordinary one): the fillings' character spans, highlighted.
        self.filled_spans = _spans(filled_spans)
        self._fence_index = -1   # the code block copied last (ctrl+shift+c / c cycle on from it)
        # A saved answer is finished; a live one finishes with `finish()`.
        self.finished = not live
        self._set_status_classes(status)

    @classmethod
    def saved(cls, message: Message, place: Place | None) -> AssistantMessage:
        note = "⚠ the answer failed" if message.status == "error" else ""
        return cls(message.content, message.reasoning, message.status, note, place=place,
                   blocks=shown_blocks(message), filled_spans=(message.stats or {}).get("filled_spans"),
                   edits=shown_edits(message))

    @property
    def message_id(self) -> int | None:
        return self.place.message_id if self.place else None

    def compose(self) -> ComposeResult:
        yield Static(self._role_text(), classes="role", markup=False)
        with Collapsible(title="Thinking", collapsed=bool(self.content), id="thinking") as thinking:
            yield Markdown(flowing(self.reasoning), id="reasoning")
        thinking.display = bool(self.reasoning)
        answer = Markdown(flowing(self.content), id="answer")
        filled = FilledText(self.content, self.filled_spans or (), id="filled")
        answer.display, filled.display = self.filled_spans is None, self.filled_spans is not None
        yield answer
        yield filled
        yield DenoisingCanvas(id="canvas")
        yield BlockSteps(self._blocks, self._edits, id="block-steps")
        note = Static(self._note or status_note(self.status, self.content, self.reasoning), markup=False,
                      id="note")
        note.display = bool(note.content)
        yield note

    @property
    def canvas(self) -> DenoisingCanvas:
        return self.query_one(DenoisingCanvas)

    @property
    def thinking(self) -> Collapsible:
        return self.query_one("#thinking", Collapsible)

    @property
    def block_steps(self) -> BlockSteps:
        return self.query_one(BlockSteps)

    @property
    def filled(self) -> FilledText:
        return self.query_one("#filled", FilledText)

    @property
    def revising(self) -> SpanSelector | None:
        """The revise-mode selection, while it is shown."""
        shown = self.query(SpanSelector)
        return shown.first() if shown else None

    def _role_text(self) -> str:
        writing = "  ‹ writing a new revision… ›" if not self.finished and self.place is not None else ""
        return role_line("Assistant", self.place, "revision") + writing

    # ---- live -------------------------------------------------------------------------------------------

    def show_frame(self, step: Step, token_texts: TokenTexts, mode: CanvasMode, total_blocks: int | None) -> None:
        self.canvas.show(step, token_texts, mode, total_blocks)

    def show_canvas_note(self, text: str) -> None:
        self.canvas.show_note(text)

    async def add_block(self, content_delta: str, reasoning_delta: str) -> None:
        """Append one committed block. Its last frame stays on the canvas until the next block's first frame
        replaces it (a block that resolves in one step would otherwise never be seen); a note stays as it is."""
        if self.canvas.note:
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
        if self.filled_spans is not None:
            self.filled.show(self.content, self.filled_spans)

    def show_filled(self, spans: Sequence[Sequence[int]]) -> None:
        """The answer is a template's: plain text with these fillings highlighted (from now on)."""
        self.filled_spans = _spans(spans)
        self.filled.show(self.content, self.filled_spans)
        self._show_text_view()

    async def restart(self) -> None:
        """Written again (regenerate, revise): empty and live, in place, until `finish`."""
        await self.leave_revise()
        self.finished = False
        await self._show("", "", "complete", "", None)
        self.block_steps.set_blocks(())

    def finish(self, status: str, note: str = "", place: Place | None = None) -> None:
        """End of generation: 'complete', 'cancelled' (committed blocks stay) or 'error' with its message."""
        self.canvas.hide()
        self.finished = True
        self.place = place or self.place
        self.status = status
        self.thinking.collapsed = bool(self.content) or not self.reasoning
        self._show_note(note or status_note(status, self.content, self.reasoning))
        self.query_one(".role", Static).update(self._role_text())

    async def show_revision(self, message: Message, place: Place) -> None:
        await self.leave_revise()
        self.place = place
        await self._show(message.content, message.reasoning, message.status,
                         "⚠ the answer failed" if message.status == "error" else "",
                         (message.stats or {}).get("filled_spans"))
        self.block_steps.set_blocks(shown_blocks(message), shown_edits(message))

    async def _show(self, content: str, reasoning: str, status: str, note: str,
                    filled_spans: Sequence[Sequence[int]] | None) -> None:
        self.content, self.reasoning, self.status = content, reasoning, status
        self.filled_spans = _spans(filled_spans)
        self.filled.show(content, self.filled_spans or ())
        self._show_text_view()
        self._fence_index = -1
        self.query_one(".role", Static).update(self._role_text())
        self.thinking.display = bool(reasoning)
        self.thinking.collapsed = bool(content)
        await self.query_one("#reasoning", Markdown).update(flowing(reasoning))
        await self.query_one("#answer", Markdown).update(flowing(content))
        self._show_note(note or status_note(status, content, reasoning))

    def _show_text_view(self) -> None:
        """Markdown for an ordinary answer, plain text with highlights for a template's; neither in revise mode."""
        revising = self.revising is not None
        self.query_one("#answer", Markdown).display = self.filled_spans is None and not revising
        self.filled.display = self.filled_spans is not None and not revising

    # ---- revise mode --------------------------------------------------------------------------------------

    async def action_revise(self) -> None:
        """Choose a span of this answer to write again (the chat screen sends it; Esc leaves)."""
        if self.revising is not None:
            self.revising.focus()
        elif self.message_id is None or not self.finished:
            self.notify("Revise an answer once it is written and saved.")
        else:
            self.post_message(self.ReviseRequested(self))

    async def enter_revise(self) -> None:
        """Revise mode, once the session said this answer can be revised."""
        if self.revising is not None or self.message_id is None:
            return
        selector = SpanSelector(self.content, self.message_id, id="revise")
        await self.mount(selector, after=self.filled)
        self._show_text_view()
        selector.focus()
        self.notify("Revise mode: ←/→ move, shift+←/→ select (ctrl: by word; or drag), Enter or r writes the "
                    "span again, Esc leaves.", markup=False)

    async def leave_revise(self) -> None:
        selector = self.revising
        if selector is None:
            return
        had_focus = selector.has_focus
        await selector.remove()
        self._show_text_view()
        if had_focus:
            self.focus()

    async def on_span_selector_left(self, event: SpanSelector.Left) -> None:
        event.stop()
        await self.leave_revise()

    def _show_note(self, text: str) -> None:
        note_widget = self.query_one("#note", Static)
        note_widget.update(text)
        note_widget.display = bool(text)
        self._set_status_classes(self.status)

    def _set_status_classes(self, status: str) -> None:
        self.set_class(status == "cancelled", "-cancelled")
        self.set_class(status == "error", "-error")

    # ---- copying ------------------------------------------------------------------------------------------

    def next_fence(self) -> tuple[Fence, int, int] | None:
        """The code block after the one copied last (wrapping round), as (fence, its number, how many);
        marks it on screen. None when the answer has no code block."""
        fences = code_fences(self.content)
        if not fences:
            return None
        self._fence_index = (self._fence_index + 1) % len(fences)
        self._mark_fence(self._fence_index, len(fences))
        return fences[self._fence_index], self._fence_index + 1, len(fences)

    def _mark_fence(self, index: int, count: int) -> None:
        shown = list(self.query_one("#answer", Markdown).query(MarkdownFence))
        if len(shown) != count:
            return  # the renderer split the source differently: nothing to point at reliably
        for number, fence in enumerate(shown):
            fence.set_class(number == index, "-copied")
        shown[index].scroll_visible()

    def on_click(self, event: events.Click) -> None:
        """A click on a code block copies it (not the end of a drag that selected text)."""
        fence = next((node for node in event.widget.ancestors_with_self if isinstance(node, MarkdownFence)), None)
        if fence is None or self.screen.selections:
            return
        shown = list(self.query_one("#answer", Markdown).query(MarkdownFence))
        if fence not in shown:
            return  # a code block of the reasoning
        sources = code_fences(self.content)
        index = shown.index(fence)
        # The source text when the parse agrees with the renderer: the widget holds its printable form.
        code = sources[index].code if len(sources) == len(shown) else fence.code
        self._fence_index = index
        self._mark_fence(index, len(shown))
        event.stop()
        self.post_message(self.CopyRequested(code, f"code block {index + 1}/{len(shown)}"))

    def action_toggle_thinking_pane(self) -> None:
        """Open or close this answer's Thinking pane (it collapses once the answer starts)."""
        if not self.reasoning:
            self.notify("This answer has no reasoning.")
            return
        self.thinking.collapsed = not self.thinking.collapsed

    def action_revision(self, delta: int) -> None:
        if self.message_id is not None:  # (while it is written again, the session says why it must wait)
            self.post_message(self.RevisionRequested(self.message_id, delta))

    def action_copy(self, what: str) -> None:
        if what == "code":
            found = self.next_fence()
            if found is None:
                self.notify("This answer has no code block.")
                return
            fence, number, count = found
            self.post_message(self.CopyRequested(fence.code, f"code block {number}/{count} ({fence.describe()})"))
        elif what == "reasoning":
            if not self.reasoning:
                self.notify("This answer has no reasoning.")
                return
            self.post_message(self.CopyRequested(self.reasoning, "the reasoning"))
        else:
            self.post_message(self.CopyRequested(self.content, "the answer"))


def _spans(spans: Sequence[Sequence[int]] | None) -> tuple[tuple[int, int], ...] | None:
    return None if spans is None else tuple((int(a), int(b)) for a, b in spans)


def status_note(status: str, content: str = "", reasoning: str = "") -> str:
    """The line under a finished answer, if any."""
    if status == "cancelled":
        return "⏹ cancelled: the blocks committed before Esc are kept"
    if status == "complete" and reasoning and not content:
        # The model never closed its thinking (or ran out of tokens inside it): the answer would look blank.
        return "⚠ no answer: the model stopped while still thinking"
    return ""
