"""Every Pillow image mode to the 8-bit RGB the vision tower reads, each on purpose.

`Image.convert("RGB")` alone is wrong for several modes: it *clips* 16- and 32-bit integer values at 255
instead of scaling them (a 16-bit grey at 25 % arrives as pure white), clips float images the same way, and
drops transparency, showing whatever colour the transparent pixels happen to hold (often black). So:

* `1`, `L`, `P`, `RGB`, `RGBX`, `CMYK`, `YCbCr`, `LAB`, `HSV`: Pillow's own conversion, which is right for
  these (CMYK by the usual naive formula, as the reference processor sees it; LAB colorimetrically).
* transparency (`LA`, `La`, `PA`, `RGBA`, `RGBa`, and `1`/`L`/`P`/`RGB` with a transparent colour): composited
  on white, the way a viewer shows the picture.
* 16-bit grey (`I;16`, `I;16L`, `I;16B`, `I;16N`): value / 65535, rounded to 8 bits.
* 32-bit integer (`I`): values within 0..65535 are 16-bit data (how 16-bit pictures land in mode I) and
  scaled as such; larger values are scaled over the whole non-negative 32-bit range; negative values have no
  brightness meaning and are refused.
* 32-bit float (`F`): values within [0, 1] are the usual normalised scale (x 255); within [0, 255] Pillow's
  8-bit scale (as is); anything else (or NaN/Inf) is refused.
* any other mode is refused with its name.

Pillow and NumPy only (no MLX), so a UI can check an attachment with it.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from ..errors import InputError

WHITE = (255, 255, 255, 255)
_PILLOW_CONVERTS = {"1", "L", "P", "RGB", "RGBX", "CMYK", "YCbCr", "LAB", "HSV"}
_WITH_ALPHA = {"LA", "PA", "RGBA"}
_PREMULTIPLIED = {"La": "LA", "RGBa": "RGBA"}
_SIXTEEN_BIT = {"I;16", "I;16L", "I;16B", "I;16N"}
# 8-bit modes that may name one colour as transparent (PNG tRNS, GIF transparency) in `info["transparency"]`.
_MAY_HAVE_TRANSPARENT_COLOUR = {"1", "L", "P", "RGB"}


def to_rgb(image: Image.Image, name: str) -> Image.Image:
    """`image` as 8-bit RGB (see the module docstring), or an `InputError` naming the file and its mode."""
    mode = image.mode
    if mode in _PREMULTIPLIED:
        image, mode = image.convert(_PREMULTIPLIED[mode]), _PREMULTIPLIED[mode]
    if mode in _WITH_ALPHA or (mode in _MAY_HAVE_TRANSPARENT_COLOUR and "transparency" in image.info):
        return Image.alpha_composite(Image.new("RGBA", image.size, WHITE), image.convert("RGBA")).convert("RGB")
    if mode == "RGB":
        return image
    if mode in _PILLOW_CONVERTS:
        return image.convert("RGB")
    if mode in _SIXTEEN_BIT:
        return _grey(np.asarray(image).astype(np.float64) / 65535.0)
    if mode == "I":
        return _grey(_integer_fraction(np.asarray(image).astype(np.int64), name))
    if mode == "F":
        return _grey(_float_fraction(np.asarray(image).astype(np.float64), name))
    raise InputError(f"{name} uses the image mode {mode!r}, which diffusion-chat does not convert; "
                     "save it as an 8-bit RGB PNG or JPEG")


def _integer_fraction(values: np.ndarray, name: str) -> np.ndarray:
    low, high = int(values.min()), int(values.max())
    if low < 0:
        raise InputError(f"{name} is a 32-bit integer image with negative values (down to {low:,}), which have no "
                         "brightness meaning; save it as an 8- or 16-bit image")
    return values / (65535.0 if high <= 65535 else float(2**31 - 1))


def _float_fraction(values: np.ndarray, name: str) -> np.ndarray:
    if not np.isfinite(values).all():
        raise InputError(f"{name} is a floating-point image with NaN or infinite values; save it as an 8- or "
                         "16-bit image")
    low, high = float(values.min()), float(values.max())
    if low < 0 or high > 255:
        raise InputError(f"{name} is a floating-point image with values from {low:g} to {high:g}, outside both "
                         "0..1 and 0..255, so its brightness scale is unknown; save it as an 8- or 16-bit image")
    return values if high <= 1.0 else values / 255.0


def _grey(fraction: np.ndarray) -> Image.Image:
    levels = np.clip(np.rint(fraction * 255.0), 0, 255).astype(np.uint8)
    return Image.fromarray(levels).convert("RGB")  # uint8 [H, W] is mode L
