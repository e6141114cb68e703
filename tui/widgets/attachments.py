"""Image attachments waiting to be sent, shown as removable chips (thumbnail, name, file size, pixel size)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from engine.images.files import ImageInfo, inspect_image

from .thumbnail import Thumbnail


@dataclass(frozen=True)
class Attachment:
    path: str                       # absolute, as sent to the engine and saved with the message
    info: ImageInfo
    soft_tokens: int | None = None  # prompt tokens it costs with the loaded model's image processor

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def label(self) -> str:
        label = f"{self.info.name} · {human_size(self.info.bytes)} · {self.info.width}×{self.info.height}"
        return label if self.soft_tokens is None else f"{label} · {self.soft_tokens} tokens"


def inspect_attachment(path: str, budget=None) -> Attachment:
    """Check an image file and describe it (with its token cost when the model's `engine.ImageBudget` is
    given); raises engine.InputError (one line) for anything unusable.

    Pillow and arithmetic only, no MLX: safe to call on the UI thread."""
    resolved = Path(path).expanduser()
    info = inspect_image(resolved)
    tokens = budget.soft_token_count(info.width, info.height) if budget is not None else None
    return Attachment(str(resolved.resolve()), info, tokens)


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


class AttachmentChip(Horizontal, can_focus=True):
    """One pending image: its thumbnail and label. A click (or Enter / Delete while focused) removes it."""

    DEFAULT_CSS = """
    AttachmentChip {
        width: auto;
        height: 3;
        margin: 0 1 0 0;
        background: $panel;
    }
    AttachmentChip:focus {
        background: $panel-lighten-1;
    }
    AttachmentChip > Thumbnail {
        width: 8;
        height: 3;
    }
    AttachmentChip > .chip-label {
        width: auto;
        height: 3;
        padding: 0 1;
        content-align: left middle;
    }
    """

    BINDINGS = [Binding("enter,delete,backspace", "remove_chip", "Remove", show=False)]

    class Removed(Message):
        def __init__(self, chip: AttachmentChip):
            super().__init__()
            self.chip = chip

    def __init__(self, attachment: Attachment):
        super().__init__(classes="attachment-chip")
        self.attachment = attachment
        self.label = f"{attachment.label}  ✕"
        self.tooltip = f"Remove {attachment.name}"

    def compose(self) -> ComposeResult:
        yield Thumbnail(self.attachment.path)
        yield Static(Content(self.label), classes="chip-label")

    @property
    def thumbnail(self) -> Thumbnail:
        return self.query_one(Thumbnail)

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.action_remove_chip()

    def action_remove_chip(self) -> None:
        self.post_message(self.Removed(self))


class AttachmentsChanged(Message):
    """A chip was added or removed (the prompt's token count changes)."""


class AttachmentBar(Horizontal):
    """The pending attachments; removing the last chip hides the bar."""

    DEFAULT_CSS = """
    AttachmentBar {
        display: none;  /* until something is attached */
        height: auto;
        padding: 0 1;
    }
    """

    @property
    def attachments(self) -> list[Attachment]:
        return [chip.attachment for chip in self.query(AttachmentChip)]

    def add(self, attachment: Attachment) -> bool:
        """Add a chip unless the same file is already attached; True when added."""
        if any(a.path == attachment.path for a in self.attachments):
            return False
        self.mount(AttachmentChip(attachment))
        self.display = True
        self.post_message(AttachmentsChanged())
        return True

    def clear(self) -> None:
        self.remove_children()
        self.display = False

    def on_attachment_chip_removed(self, event: AttachmentChip.Removed) -> None:
        event.stop()
        chip = event.chip
        self.display = any(other is not chip for other in self.query(AttachmentChip))
        chip.remove()
        self.post_message(AttachmentsChanged())
