"""Checking an image file the way the processor will read it, with Pillow only (no MLX), so a UI thread can
check an attachment and describe it on its chip. Every refusal is one `InputError` line.
"""

from __future__ import annotations

import mimetypes
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from ..errors import InputError
from .modes import to_rgb

# Extensions that are certainly sound or film, on top of what `mimetypes` knows on this system.
_AUDIO_VIDEO_EXTENSIONS = {
    ".wav", ".mp3", ".flac", ".ogg", ".oga", ".opus", ".m4a", ".aac", ".aif", ".aiff", ".wma", ".mid", ".midi",
    ".mp4", ".m4v", ".mov", ".avi", ".mkv", ".webm", ".wmv", ".flv", ".mpg", ".mpeg", ".3gp", ".ogv",
}
# ISO-BMFF ("ftyp") brands that are still images (HEIF/AVIF); every other brand is audio or video.
_STILL_IMAGE_BRANDS = {b"heic", b"heix", b"hevc", b"heim", b"heis", b"hevm", b"hevs", b"mif1", b"msf1", b"avif", b"avis"}


@dataclass(frozen=True)
class ImageInfo:
    name: str      # file name, for the chip
    bytes: int     # file size
    width: int     # as displayed (EXIF orientation applied)
    height: int


def inspect_image(path: str | Path) -> ImageInfo:
    """Check that `path` is an image the processor can read, and describe it."""
    path = Path(path).expanduser()
    size = _checked_file(path).st_size
    image = open_image(path)
    return ImageInfo(name=path.name, bytes=size, width=image.width, height=image.height)


def displayed_size(path: str | Path) -> tuple[int, int] | None:
    """(width, height) as displayed, from the file's header alone (no decoding; cheap enough to call per
    keystroke for a token estimate); None when the file cannot be read as an image."""
    try:
        with Image.open(Path(path).expanduser()) as image:
            width, height = image.size
            # EXIF orientations 5-8 turn the picture by 90 degrees.
            if image.getexif().get(0x0112, 1) in (5, 6, 7, 8):
                width, height = height, width
            return width, height
    except Exception:  # any unreadable file: the engine refuses it with its own message when it is sent
        return None


def open_image(path: str | Path) -> Image.Image:
    """Decode the whole image (so a truncated file fails here, not later), upright per its EXIF orientation, as
    8-bit RGB with every Pillow mode converted on purpose (engine.images.modes)."""
    path = Path(path).expanduser()
    _checked_file(path)
    name = path.name
    if _is_audio_or_video_name(path):
        raise _audio_video_error(name)
    try:
        # Pillow only warns between 1x and 2x its pixel limit; a bomb is refused either way.
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                image.load()
                return to_rgb(ImageOps.exif_transpose(image), name)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise InputError(
            f"{name} is too large to decode safely (more than {Image.MAX_IMAGE_PIXELS:,} pixels); shrink it first"
        )
    except UnidentifiedImageError:
        if _has_audio_or_video_header(path):
            raise _audio_video_error(name)
        raise InputError(f"{name} is not an image (or not in a format Pillow can read)")
    except PermissionError:
        raise InputError(f"cannot read {name}: permission denied")
    except (OSError, SyntaxError, ValueError) as exc:
        # Pillow reports cut-off or damaged data as OSError ("image file is truncated"), SyntaxError
        # (broken PNG chunks) or ValueError, depending on the codec.
        if _has_audio_or_video_header(path):
            raise _audio_video_error(name)
        raise InputError(f"{name} is truncated or corrupt ({str(exc).splitlines()[0] if str(exc) else 'cannot decode'})")


def _audio_video_error(name: str) -> InputError:
    return InputError(f"{name}: audio/video files are not supported; attach an image (PNG, JPEG, WebP, GIF, ...)")


def _checked_file(path: Path):
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise InputError(f"image not found: {path}")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}")
    if path.is_dir():
        raise InputError(f"{path} is a folder, not an image file")
    if stat.st_size == 0:
        raise InputError(f"{path.name} is empty (0 bytes)")
    return stat


def _is_audio_or_video_name(path: Path) -> bool:
    if path.suffix.lower() in _AUDIO_VIDEO_EXTENSIONS:
        return True
    mime = mimetypes.guess_type(path.name)[0] or ""
    return mime.startswith(("audio/", "video/"))


def _has_audio_or_video_header(path: Path) -> bool:
    """Sniff the first bytes for common sound/film containers (a misnamed .mp4 or .wav)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError:
        return False
    if head[:4] == b"RIFF":
        return head[8:12] in (b"WAVE", b"AVI ")
    if head[4:8] == b"ftyp":
        return head[8:12] not in _STILL_IMAGE_BRANDS
    if head[:4] == b"FORM":
        return head[8:12] in (b"AIFF", b"AIFC")
    return head.startswith((
        b"ID3", b"fLaC", b"OggS", b"\x1aE\xdf\xa3",  # mp3 with tags, FLAC, Ogg, Matroska/WebM
        b"\x00\x00\x01\xba", b"\x00\x00\x01\xb3",    # MPEG program / video stream
        b"0&\xb2u\x8ef\xcf\x11", b"FLV", b"MThd",    # ASF (wma/wmv), Flash video, MIDI
    )) or head[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2", b"\xff\xf1", b"\xff\xf9")  # mp3 / AAC frames
