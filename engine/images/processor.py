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

from pathlib import Path
from typing import Any, Sequence

import mlx.core as mx
import numpy as np
from PIL import Image

from ..io.checkpoint import read_json
from ..errors import CheckpointError, InputError
from .budget import (  # noqa: F401  (re-exported: the processor's arithmetic)
    DEFAULT_MAX_SOFT_TOKENS,
    DEFAULT_PATCH_SIZE,
    DEFAULT_POOLING_KERNEL_SIZE,
    ImageBudget,
    soft_token_count,
    target_size,
)
from .files import ImageInfo, inspect_image, open_image  # noqa: F401  (re-exported)


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

    @property
    def budget(self) -> ImageBudget:
        return ImageBudget(self.max_soft_tokens, self.patch_size, self.pooling_kernel_size)

    def target_size(self, width: int, height: int) -> tuple[int, int]:
        return self.budget.target_size(width, height)

    def soft_token_count(self, width: int, height: int) -> int:
        return self.budget.soft_token_count(width, height)

    def preprocess(self, image_path: str | Path) -> tuple[mx.array, int]:
        """An image file -> (pixel_values float32 [3, H', W'], soft-token count)."""
        image = open_image(image_path)  # 8-bit RGB whatever the file's mode (engine.images.modes)
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
        from ..io.tokenizer import ChatPrompt

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

