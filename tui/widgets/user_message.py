"""Your turn in the transcript: its text, image thumbnails, and (focused) `e` to edit it and `[` / `]` for its
branches. It posts messages; the chat screen acts. Also what every turn shares: its CSS and role line."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message as TextualMessage
from textual.widgets import Static


from ..records import Message, Place
from .printable import flowing
from .thumbnail import Thumbnail

MESSAGE_CSS = """
    height: auto;
    margin: 1 0 0 0;
    border-left: blank;
    &:focus {
        border-left: outer $accent;
        background: $boost;
    }
"""


def role_line(role: str, place: Place | None, kind: str) -> str:
    if place is None or place.count < 2:
        return role
    return f"{role}  ‹ {kind} {place.number}/{place.count} ›"


class UserMessage(Vertical, can_focus=True):
    DEFAULT_CSS = f"""
    UserMessage {{{MESSAGE_CSS}}}
    UserMessage .role {{
        text-style: bold;
        color: $primary;
    }}
    UserMessage .user-text {{
        padding: 0 1;
    }}
    UserMessage .user-images {{
        height: auto;
        padding: 0 1;
    }}
    UserMessage .user-image {{
        width: auto;
        height: auto;
        margin: 0 2 0 0;
    }}
    UserMessage .user-image Thumbnail {{
        width: 16;
        height: 6;
    }}
    UserMessage .user-image-label {{
        color: $text-muted;
        width: auto;
        padding: 0 1;
    }}
    """

    BINDINGS = [
        Binding("e", "edit", "Edit and resend"),
        Binding("left_square_bracket", "branch(-1)", "Prev branch"),
        Binding("right_square_bracket", "branch(1)", "Next branch"),
    ]

    class EditRequested(TextualMessage):
        def __init__(self, widget: UserMessage):
            super().__init__()
            self.widget = widget

    class BranchRequested(TextualMessage):
        def __init__(self, message_id: int, delta: int):
            super().__init__()
            self.message_id, self.delta = message_id, delta

    def __init__(self, content: str, images: Sequence[str] = (), image_labels: Sequence[str] = (),
                 place: Place | None = None):
        super().__init__(classes="message user-message")
        self.content = content
        self.images = tuple(images)
        self.image_labels = list(image_labels) or [Path(path).name for path in images]
        self.place = place

    @classmethod
    def saved(cls, message: Message, place: Place | None) -> UserMessage:
        return cls(message.content, message.images, place=place)

    @property
    def message_id(self) -> int | None:
        return self.place.message_id if self.place else None

    def compose(self) -> ComposeResult:
        yield Static(role_line("You", self.place, "branch"), classes="role", markup=False)
        yield Static(flowing(self.content), markup=False, classes="user-text")
        if self.images:
            with Horizontal(classes="user-images"):
                for path, label in zip(self.images, self.image_labels):
                    with Vertical(classes="user-image"):
                        yield Thumbnail(path)
                        yield Static(f"🖼 {label}", markup=False, classes="user-image-label")

    def action_edit(self) -> None:
        if self.message_id is not None:
            self.post_message(self.EditRequested(self))

    def action_branch(self, delta: int) -> None:
        if self.message_id is not None:
            self.post_message(self.BranchRequested(self.message_id, delta))
