"""A small preview of an image file: in an attachment chip and in the user message that sent it.

Drawn by textual-image, which speaks the terminal's graphics protocol where there is one (Kitty's, Sixel) and
falls back to coloured half-blocks elsewhere. The file is decoded and shrunk on a worker thread, never on the
UI thread (a large JPEG can take a good part of a second); until then, and if it cannot be read, the
thumbnail shows a placeholder.
"""

from __future__ import annotations

from PIL import Image, ImageOps
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import Worker, WorkerState

# textual-image asks the terminal what it supports when it is imported: this module is imported before the
# app takes the terminal over (tui.app imports it), as it must be.
from textual_image.widget import HalfcellImage
from textual_image.widget import Image as TerminalImage

# Enough pixels for a sharp small preview with a graphics protocol; few enough to render at once.
MAX_PIXELS = 192


def decode_thumbnail(path: str, size: int = MAX_PIXELS) -> Image.Image:
    """The image shrunk to fit `size`×`size` pixels, upright (EXIF orientation), in RGB. Raises OSError or
    ValueError (Pillow's errors) for a file that cannot be read."""
    with Image.open(path) as image:
        image.draft("RGB", (size, size))  # JPEG: decode at a fraction of the size right away
        upright = ImageOps.exif_transpose(image)
        upright.thumbnail((size, size))
        return upright.convert("RGB")


class Thumbnail(Widget):
    """A fixed-size box (set its width and height in CSS) that shows `path` once decoded."""

    DEFAULT_CSS = """
    Thumbnail {
        width: 8;
        height: 4;
        align: center middle;
        background: $boost;
    }
    Thumbnail > .thumbnail-placeholder {
        width: 100%;
        height: 100%;
        content-align: center middle;
        color: $text-muted;
    }
    Thumbnail > .thumbnail-image {
        width: auto;
        height: auto;
    }
    """

    def __init__(self, path: str, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.path = path
        self.loaded = False          # the image is shown
        self.failed: str | None = None

    def compose(self) -> ComposeResult:
        yield Static("⋯", classes="thumbnail-placeholder")

    def on_mount(self) -> None:
        self.run_worker(lambda: decode_thumbnail(self.path), thread=True, exit_on_error=False,
                        name=f"thumbnail {self.path}")

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        event.stop()
        if event.state == WorkerState.SUCCESS:
            # No terminal to ask in a headless run (tests): the half-block fallback every terminal can show.
            image_class = HalfcellImage if self.app.is_headless else TerminalImage
            await self.query(".thumbnail-placeholder").remove()
            await self.mount(image_class(event.worker.result, classes="thumbnail-image"))
            self.loaded = True
        elif event.state == WorkerState.ERROR:
            self.failed = str(event.worker.error).splitlines()[0] if str(event.worker.error) else "unreadable"
            self.query_one(".thumbnail-placeholder", Static).update("?")
            self.tooltip = f"cannot show {self.path}: {self.failed}"
