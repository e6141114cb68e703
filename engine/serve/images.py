"""Images of a request (`image_url` parts) as files the engine's image processor reads.

Data URLs are decoded into a private temporary folder that lives as long as the request; `file://` URLs and
plain paths are read in place, and only when the server was started with `--allow-local-files` (otherwise a
client could make the server read any file it can). The server fetches nothing from the network. Every
image is checked here, before the request is queued, with the same checks the app applies to an attachment.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import shutil
import tempfile
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from ..images.files import inspect_image
from .errors import APIError, bad_request

if TYPE_CHECKING:
    from .requests import Limits


class ImageFolder:
    """The decoded images of one request; the folder is made on the first image and removed by `close()`."""

    def __init__(self):
        self._folder: Path | None = None
        self._count = 0

    def add(self, url: str, limits: Limits, param: str) -> str:
        """The path of the image `url` names, checked; else an APIError naming `param`."""
        self._count += 1
        if url.startswith("data:"):
            path = self._decode(url, limits, param)
        elif url.startswith(("http://", "https://")):
            raise bad_request("this server does not fetch image URLs; send the image as a data URL", param)
        elif not limits.allow_local_files:
            raise bad_request("local image paths are refused; send a data URL (or start the server with "
                              "--allow-local-files)", param)
        else:
            path = Path(urllib.parse.unquote(url[len("file://"):]) if url.startswith("file://") else url).expanduser()
            if path.is_file() and path.stat().st_size > limits.max_image_bytes:
                raise _too_large(path.stat().st_size, limits, param)
        try:
            inspect_image(path)
        except InputError as exc:
            raise bad_request(f"image {self._count}: {exc}", param, "invalid_image") from None
        return str(path)

    def _decode(self, url: str, limits: Limits, param: str) -> Path:
        header, comma, payload = url[len("data:"):].partition(",")
        if not comma:
            raise bad_request("a data URL needs a comma before its data", param, "invalid_image")
        mime, *options = header.split(";")
        if mime.startswith(("audio/", "video/")):
            raise bad_request(f"image {self._count}: audio/video is not supported; send an image", param,
                              "unsupported_content")
        if "base64" in options:
            # base64 grows data by 4/3: refuse an oversized image before decoding it.
            if len(payload) * 3 // 4 > limits.max_image_bytes + 3:
                raise _too_large(len(payload) * 3 // 4, limits, param)
            try:
                data = base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError):
                raise bad_request(f"image {self._count}: the data URL is not valid base64", param,
                                  "invalid_image") from None
        else:
            data = urllib.parse.unquote_to_bytes(payload)
        if len(data) > limits.max_image_bytes:
            raise _too_large(len(data), limits, param)
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="diffusion-chat-serve-"))
        path = self._folder / f"image-{self._count}{mimetypes.guess_extension(mime or '') or ''}"
        path.write_bytes(data)
        return path

    def close(self) -> None:
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def _too_large(size: int, limits: Limits, param: str) -> APIError:
    return APIError(413, f"an image of {size / 2**20:.1f} MiB is over this server's limit of "
                         f"{limits.max_image_bytes / 2**20:.1f} MiB", "image_too_large", param)
