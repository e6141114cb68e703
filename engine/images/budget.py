"""How many prompt tokens an image costs: the Gemma 4 resize arithmetic, pure Python (no MLX, no Pillow), so
a UI can show the cost of an attachment before anything runs."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError

# The Gemma 4 processor's defaults (google/gemma-4-26B-A4B-it processor_config.json).
DEFAULT_MAX_SOFT_TOKENS = 280
DEFAULT_PATCH_SIZE = 16
DEFAULT_POOLING_KERNEL_SIZE = 3

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


@dataclass(frozen=True)
class ImageBudget:
    """A checkpoint's image processor settings that decide an image's token cost."""

    max_soft_tokens: int = DEFAULT_MAX_SOFT_TOKENS
    patch_size: int = DEFAULT_PATCH_SIZE
    pooling_kernel_size: int = DEFAULT_POOLING_KERNEL_SIZE

    def target_size(self, width: int, height: int) -> tuple[int, int]:
        return target_size(width, height, self.max_soft_tokens, self.patch_size, self.pooling_kernel_size)

    def soft_token_count(self, width: int, height: int) -> int:
        return soft_token_count(width, height, self.max_soft_tokens, self.patch_size, self.pooling_kernel_size)
