"""The chat screen's token counter: the next turn's whole prompt (history + what is typed + attachments),
counted with the model's own template and tokenizer on a worker thread once typing pauses, and shown against
the model's context; beside the message box, or under it when the chat is narrow. Against a server (no tokenizer
here) it shows what the server counted at its last answer, as a lower bound."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from textual.widget import Widget

from engine.errors import EngineError
from engine.events import ModelInfo

from ..records import Message

if TYPE_CHECKING:
    from .chat import ChatScreen

# Counting waits this long after the last keystroke, so typing (or a huge paste) is counted once, not per key.
COUNT_DEBOUNCE_S = 0.3
# The message box keeps at least this many columns; the token count (about this wide) moves under it otherwise.
MIN_PROMPT_COLUMNS = 40
TOKEN_COUNT_COLUMNS = 22


class PromptCounter:
    def __init__(self, screen: "ChatScreen"):
        self.screen = screen
        self._timer = None
        self._request = 0     # the newest count asked for; older results are dropped

    def place(self, panel: Widget) -> None:
        """The count goes under the message box when beside it the box would get too narrow (80 columns with
        the sampler panel open)."""
        room = self.screen.size.width - (panel.styles.width.value if panel.has_class("-open") else 0)
        self.screen.query_one("#prompt-row").set_class(room - TOKEN_COUNT_COLUMNS < MIN_PROMPT_COLUMNS, "-stacked")

    def recount(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.screen.set_timer(COUNT_DEBOUNCE_S, self._count_now)

    def _count_now(self) -> None:
        screen, session = self.screen, self.screen.session
        model = session.model
        if model is not None and model.count_tokens is None:
            # A server: its tokenizer is not here, but its answers say how many tokens it read and wrote.
            screen.token_count.show_counted(counted_by_server(session.messages), model.context_length)
            return
        if model is None or not model.context_length:
            screen.token_count.show(None, None)
            return
        self._request += 1
        messages = session.draft_messages(screen.prompt.value, [a.path for a in screen.attachments.attachments])
        request, think = self._request, session.think
        screen.run_worker(lambda: self._count_in_thread(model, messages, think, request), thread=True,
                          exclusive=True, group="token-count")

    def _count_in_thread(self, model: ModelInfo, messages: list[dict], think: bool, request: int) -> None:
        """The tokenizer runs here, never on the UI thread (a pasted book takes seconds to tokenize)."""
        try:
            tokens = model.count_tokens(messages, think)
        except EngineError:
            tokens = None  # e.g. nothing typed yet in a new conversation: the template has no user turn
        try:
            self.screen.app.call_from_thread(self._show, model, tokens, request)
        except RuntimeError:
            pass  # the app closed while counting

    def _show(self, model: ModelInfo, tokens: int | None, request: int) -> None:
        session = self.screen.session
        if request != self._request or model is not session.model or not self.screen.is_attached:
            return  # a newer count is on its way, the model changed, or the app is closing (app.exit)
        if not self.screen.app.is_running:
            # Shutting down without app.exit() (the end of a pilot test): the screen is still attached while its
            # widgets are removed, so the prompt may be gone (a count landing then raised NoMatches in a CI run).
            return
        if tokens is None and not self.screen.prompt.value.strip() and not session.history:
            tokens = 0
        over = tokens is not None and session.context_verdict(model, tokens) is not None
        self.screen.token_count.show(tokens, model.context_length, over)


def counted_by_server(messages: Sequence[Message]) -> int | None:
    """The conversation's tokens as the server counted them at the last answer on this path (its prompt plus the
    answer); 0 for a new conversation; None when the last answer carries no count (a server that sends no usage,
    or an answer that failed)."""
    if not messages:
        return 0
    for message in reversed(messages):
        if message.role == "assistant":
            stats = message.stats or {}
            prompt, answer = stats.get("prompt_tokens"), stats.get("generated_tokens")
            if isinstance(prompt, int) and isinstance(answer, int) and prompt > 0:
                return prompt + answer
            return None
    return None
