"""Image attachments waiting to be sent, shown as removable chips (name, file size, pixel size)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.containers import Horizontal
from textual.message import Message
from textual.content import Content
from textual.widgets import Button

from engine.image_files import ImageInfo, inspect_image


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


class AttachmentChip(Button):

    DEFAULT_CSS = """
    AttachmentChip {
        margin: 0 1 0 0;
    }
    """
    def __init__(self, attachment: Attachment):
        super().__init__(Content(f"{attachment.label}  ✕"), classes="attachment-chip", compact=True)
        self.attachment = attachment
        self.tooltip = f"Remove {attachment.name}"


class AttachmentsChanged(Message):
    """A chip was added or removed (the prompt's token count changes)."""


class AttachmentBar(Horizontal):
    """The pending attachments; pressing a chip removes it."""

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

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if isinstance(event.button, AttachmentChip):
            event.stop()
            chip = event.button
            self.display = any(other is not chip for other in self.query(AttachmentChip))
            chip.remove()
            self.post_message(AttachmentsChanged())
