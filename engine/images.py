"""Images for DiffusionGemma: checking an attachment, the Gemma 4 image processor and prompt expansion.

* `inspect_image(path)` checks a file the way `preprocess` will read it and returns what the UI shows
  on an attachment chip; every refusal is one `InputError` line.
* `ImageProcessor` turns a file into the pixels the vision tower takes: RGB, an aspect-preserving
  bicubic resize to the largest size within the soft-token budget whose sides are multiples of
  patch x pooling (48 px), rescaled to [0, 1], channels first. No padding, no cropping.
* `expand_prompt` widens each `<|image|>` placeholder of a tokenized prompt into
  `<|image>` + n x `<|image|>` + `<image|>`, n being that image's soft-token count.

Pillow does the decoding and the resize, so pixels match the reference processor exactly.
"""

from __future__ import annotations

import math
import mimetypes
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import mlx.core as mx
import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from .checkpoint import read_json
from .errors import CheckpointError, InputError

# The Gemma 4 processor's defaults (google/gemma-4-26B-A4B-it processor_config.json).
DEFAULT_MAX_SOFT_TOKENS = 280
DEFAULT_PATCH_SIZE = 16
DEFAULT_POOLING_KERNEL_SIZE = 3

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


def open_image(path: str | Path) -> Image.Image:
    """Decode the whole image (so a truncated file fails here, not later), upright per its EXIF orientation."""
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
                return ImageOps.exif_transpose(image)
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


def target_size(width: int, height: int, max_soft_tokens: int = DEFAULT_MAX_SOFT_TOKENS,
                patch_size: int = DEFAULT_PATCH_SIZE, pooling_kernel_size: int = DEFAULT_POOLING_KERNEL_SIZE
                ) -> tuple[int, int]:
    """(width, height) after the Gemma 4 resize: the largest aspect-preserving size within
    `max_soft_tokens x pooling^2` patches whose sides are multiples of patch x pooling."""
    if width <= 0 or height <= 0:
        raise InputError(f"an image of {width}x{height} pixels has nothing to show")
    max_patches = max_soft_tokens * pooling_kernel_size ** 2
    side = patch_size * pooling_kernel_size
    factor = math.sqrt(max_patches * patch_size ** 2 / (height * width))
    new_height = math.floor(factor * height / side) * side
    new_width = math.floor(factor * width / side) * side
    # A very thin image rounds its short side to 0: give it one pooled row and as long a strip as the budget allows.
    longest = (max_patches // pooling_kernel_size ** 2) * side
    if new_height == 0:
        new_height, new_width = side, min(math.floor(width / height) * side, longest)
    elif new_width == 0:
        new_width, new_height = side, min(math.floor(height / width) * side, longest)
    return new_width, new_height


def soft_token_count(width: int, height: int, max_soft_tokens: int = DEFAULT_MAX_SOFT_TOKENS,
                     patch_size: int = DEFAULT_PATCH_SIZE,
                     pooling_kernel_size: int = DEFAULT_POOLING_KERNEL_SIZE) -> int:
    """How many prompt tokens an image of this size costs."""
    new_width, new_height = target_size(width, height, max_soft_tokens, patch_size, pooling_kernel_size)
    side = patch_size * pooling_kernel_size
    return (new_width // side) * (new_height // side)


class ImageProcessor:
    """The Gemma 4 image processor, configured from a checkpoint's `processor_config.json`."""

    def __init__(self, image_token_id: int, boi_token_id: int, eoi_token_id: int,
                 max_soft_tokens: int = DEFAULT_MAX_SOFT_TOKENS, patch_size: int = DEFAULT_PATCH_SIZE,
                 pooling_kernel_size: int = DEFAULT_POOLING_KERNEL_SIZE, resample: int = Image.Resampling.BICUBIC,
                 rescale_factor: float | None = 1 / 255, image_mean: Sequence[float] | None = None,
                 image_std: Sequence[float] | None = None):
        self.image_token_id, self.boi_token_id, self.eoi_token_id = image_token_id, boi_token_id, eoi_token_id
        self.max_soft_tokens = max_soft_tokens
        self.patch_size = patch_size
        self.pooling_kernel_size = pooling_kernel_size
        self.resample = Image.Resampling(resample)
        self.rescale_factor = rescale_factor
        self.image_mean, self.image_std = image_mean, image_std

    @classmethod
    def from_checkpoint(cls, path: Path, config: Any) -> "ImageProcessor":
        """`config` is the model config (object or dict) carrying the image/boi/eoi token ids and
        `vision_config`; the processor settings come from `processor_config.json` (or the older flat
        `preprocessor_config.json`), falling back to the vision config."""
        vision = _field(config, "vision_config", None) or {}
        settings = {}
        if (Path(path) / "processor_config.json").exists():
            settings = read_json(Path(path) / "processor_config.json", "processor_config.json").get("image_processor") or {}
        elif (Path(path) / "preprocessor_config.json").exists():
            settings = read_json(Path(path) / "preprocessor_config.json", "preprocessor_config.json")
        default_budget = _field(config, "vision_soft_tokens_per_image", None) or _field(
            vision, "default_output_length", DEFAULT_MAX_SOFT_TOKENS)
        try:
            processor = cls(
                image_token_id=int(_field(config, "image_token_id", 258880)),
                boi_token_id=int(_field(config, "boi_token_id", 255999)),
                eoi_token_id=int(_field(config, "eoi_token_id", 258882)),
                max_soft_tokens=int(settings.get("max_soft_tokens", default_budget)),
                patch_size=int(settings.get("patch_size", _field(vision, "patch_size", DEFAULT_PATCH_SIZE))),
                pooling_kernel_size=int(settings.get(
                    "pooling_kernel_size", _field(vision, "pooling_kernel_size", DEFAULT_POOLING_KERNEL_SIZE))),
                resample=int(settings.get("resample", Image.Resampling.BICUBIC)),
                rescale_factor=float(settings.get("rescale_factor", 1 / 255)) if settings.get("do_rescale", True) else None,
                image_mean=settings.get("image_mean") if settings.get("do_normalize") else None,
                image_std=settings.get("image_std") if settings.get("do_normalize") else None,
            )
        except (TypeError, ValueError) as exc:
            raise CheckpointError(f"processor_config.json has an unusable image_processor setting ({exc})")
        if min(processor.max_soft_tokens, processor.patch_size, processor.pooling_kernel_size) <= 0:
            raise CheckpointError("processor_config.json: max_soft_tokens, patch_size and pooling_kernel_size must be positive")
        return processor

    def target_size(self, width: int, height: int) -> tuple[int, int]:
        return target_size(width, height, self.max_soft_tokens, self.patch_size, self.pooling_kernel_size)

    def soft_token_count(self, width: int, height: int) -> int:
        return soft_token_count(width, height, self.max_soft_tokens, self.patch_size, self.pooling_kernel_size)

    def preprocess(self, image_path: str | Path) -> tuple[mx.array, int]:
        """An image file -> (pixel_values float32 [3, H', W'], soft-token count)."""
        image = open_image(image_path)
        if image.mode != "RGB":
            image = image.convert("RGB")
        size = self.target_size(image.width, image.height)
        if size != image.size:
            image = image.resize(size, resample=self.resample)
        pixels = np.asarray(image, dtype=np.float32)
        if self.rescale_factor is not None:
            pixels = pixels * np.float32(self.rescale_factor)
        if self.image_mean is not None and self.image_std is not None:
            pixels = (pixels - np.asarray(self.image_mean, np.float32)) / np.asarray(self.image_std, np.float32)
        side = self.patch_size * self.pooling_kernel_size
        return mx.array(pixels.transpose(2, 0, 1)), (size[0] // side) * (size[1] // side)

    def expand_prompt(self, ids: Sequence[int], counts: Sequence[int]) -> tuple[list[int], list[int]]:
        return expand_prompt(ids, self.image_token_id, self.boi_token_id, self.eoi_token_id, counts)

    def prepare_prompt(self, ids: Sequence[int], text: str, image_paths: Sequence[str | Path]):
        """Tokenized chat prompt with one `<|image|>` per image -> `ChatPrompt` with expanded ids,
        token type ids (1 on soft tokens), one pixel array per image and each image's token count."""
        from .tokenizer import ChatPrompt

        processed = [self.preprocess(p) for p in image_paths]
        counts = [n for _, n in processed]
        expanded, token_types = self.expand_prompt(ids, counts)
        return ChatPrompt(ids=expanded, text=text, pixel_values=[pixels for pixels, _ in processed],
                          token_type_ids=token_types, image_tokens=counts)


def expand_prompt(ids: Sequence[int], image_token_id: int, boi_id: int, eoi_id: int,
                  counts: Sequence[int]) -> tuple[list[int], list[int]]:
    """Replace the i-th `<|image|>` placeholder by `<|image>` + counts[i] x `<|image|>` + `<image|>`.

    Returns the new ids and token type ids (1 on the soft tokens, 0 elsewhere)."""
    placeholders = sum(1 for t in ids if t == image_token_id)
    if placeholders != len(counts):
        raise InputError(
            f"the prompt has {placeholders} image placeholder(s) but {len(counts)} image(s) were given"
        )
    out: list[int] = []
    token_types: list[int] = []
    images = iter(counts)
    for token in ids:
        if token == image_token_id:
            n = next(images)
            out += [boi_id] + [image_token_id] * n + [eoi_id]
            token_types += [0] + [1] * n + [0]
        else:
            out.append(int(token))
            token_types.append(0)
    return out, token_types


def image_runs(token_type_ids: Sequence[int]) -> list[tuple[int, int]]:
    """(start, end) of each maximal run of image soft tokens (end exclusive): one run per image.

    The encoder attends bidirectionally inside a run, so a cached prefix must never end inside one
    (`Session.reusable_prefix(images=...)`)."""
    runs = []
    start = None
    for position, kind in enumerate(token_type_ids):
        if kind and start is None:
            start = position
        elif not kind and start is not None:
            runs.append((start, position))
            start = None
    if start is not None:
        runs.append((start, len(token_type_ids)))
    return runs


def _field(config: Any, name: str, default: Any) -> Any:
    if isinstance(config, dict):
        value = config.get(name, default)
    else:
        value = getattr(config, name, default)
    return default if value is None else value

