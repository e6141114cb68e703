"""The prompt's token count against the model's context (`1,234 / 32,768 tokens`), next to the prompt; against a
server, what the server counted (`≥1,234 / 32,768 tokens`)."""

from __future__ import annotations

from textual.widgets import Static


class TokenCount(Static):
    """Shows what the screen counted; red (class `-over`) when the turn would not fit."""

    DEFAULT_CSS = """
    TokenCount {
        width: auto;
        min-width: 10;
        height: 3;
        padding: 1 1 0 1;
        color: $text-muted;
    }
    TokenCount.-over {
        color: $error;
        text-style: bold;
    }
    """

    def __init__(self, **kwargs):
        super().__init__("", markup=False, **kwargs)
        self.display = False  # until a model with a known context is loaded

    def show(self, tokens: int | None, context: int | None, over: bool = False) -> None:
        """`tokens` None: not counted (yet, or the count failed); `context` None: nothing to show."""
        self.display = context is not None
        self.tooltip = None
        if context is not None:
            self.update(f"{'?' if tokens is None else f'{tokens:,}'} / {context:,} tokens")
        self.set_class(over, "-over")

    def show_counted(self, tokens: int | None, context: int | None) -> None:
        """A server's count of the conversation at its last answer (its prompt and the answer): a lower bound for
        the next prompt, which also holds what is being typed. `tokens` None: the server counted nothing."""
        self.display = tokens is not None and (context is not None or tokens > 0)
        if self.display:
            self.update(f"≥{tokens:,} / {context:,} tokens" if context is not None else f"≥{tokens:,} tokens")
            self.tooltip = ("as the server counted this conversation at its last answer; the message being "
                            "typed is not counted yet (a server does not share its tokenizer)")
        self.set_class(context is not None and tokens is not None and tokens >= context, "-over")
