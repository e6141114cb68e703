"""Every Pillow image mode reaches the vision tower as correctly scaled 8-bit RGB, or is refused with one line
(engine/images/modes.py). Images are generated here with NumPy + Pillow; the checks read the pixel values the
processor hands the model (384 x 384 is the dg_vision processor's own target size: no resize)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from conftest import CHECKPOINTS
from engine.errors import InputError
from engine.images.modes import to_rgb
from engine.images.processor import ImageProcessor, inspect_image

SIDE = 384
# Left half at 25 %, right half at 75 % of the full scale, in 8 bits after correct scaling.
QUARTER, THREE_QUARTERS = 64, 191


@pytest.fixture(scope="module")
def processor():
    folder = CHECKPOINTS / "dg_vision"
    return ImageProcessor.from_checkpoint(folder, json.loads((folder / "config.json").read_text()))


def halves(low, high, dtype) -> np.ndarray:
    array = np.empty((SIDE, SIDE), dtype=dtype)
    array[:, : SIDE // 2], array[:, SIDE // 2:] = low, high
    return array


def seen(processor, path) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The 8-bit RGB the model gets at the middle of the left and of the right half."""
    pixels, _ = processor.preprocess(path)
    values = np.rint(np.array(pixels) * 255).astype(int)   # [3, H, W], rescaled by 1/255
    assert values.shape == (3, SIDE, SIDE)
    return tuple(values[:, SIDE // 2, SIDE // 4]), tuple(values[:, SIDE // 2, 3 * SIDE // 4])


def saved(tmp_path, image: Image.Image, name: str):
    path = tmp_path / name
    image.save(path)
    return path


def mode_of(path) -> str:
    with Image.open(path) as image:
        return image.mode


def grey(level: int) -> tuple[int, int, int]:
    return (level, level, level)


def test_a_16_bit_png_is_scaled_not_clipped_to_white(processor, tmp_path):
    image = Image.fromarray(halves(16384, 49151, np.uint16))
    assert image.mode == "I;16"
    path = saved(tmp_path, image, "grey16.png")
    assert mode_of(path) == "I;16"
    assert seen(processor, path) == (grey(QUARTER), grey(THREE_QUARTERS))


def test_big_endian_16_bit_tiff(processor, tmp_path):
    # (Pillow's own convert("I;16B") clips too, so the big-endian image is built from its bytes.)
    path = saved(tmp_path, Image.fromarray(halves(16384, 49151, np.uint16).astype(">u2")), "grey16be.tiff")
    assert mode_of(path) == "I;16B"
    assert seen(processor, path) == (grey(QUARTER), grey(THREE_QUARTERS))


def test_32_bit_integer_images_with_16_bit_and_full_range_values(processor, tmp_path):
    sixteen = saved(tmp_path, Image.fromarray(halves(16384, 49151, np.int32)), "i16.tiff")
    assert mode_of(sixteen) == "I"
    assert seen(processor, sixteen) == (grey(QUARTER), grey(THREE_QUARTERS))
    full = saved(tmp_path, Image.fromarray(halves(2**29, 3 * 2**29, np.int32)), "i32.tiff")
    assert seen(processor, full) == (grey(QUARTER), grey(THREE_QUARTERS))


def test_32_bit_integer_with_negative_values_is_refused(processor, tmp_path):
    path = saved(tmp_path, Image.fromarray(halves(-5, 100, np.int32)), "signed.tiff")
    with pytest.raises(InputError, match=r"signed.tiff is a 32-bit integer image with negative values"):
        processor.preprocess(path)


@pytest.mark.parametrize("low, high", [(0.25, 0.75), (64.0, 191.0)])
def test_float_images_on_the_unit_or_the_8_bit_scale(processor, tmp_path, low, high):
    path = saved(tmp_path, Image.fromarray(halves(low, high, np.float32)), "float.tiff")
    assert mode_of(path) == "F"
    assert seen(processor, path) == (grey(QUARTER), grey(THREE_QUARTERS))


@pytest.mark.parametrize("low, high, problem", [(0.0, 300.0, "values from 0 to 300"), (np.nan, 1.0, "NaN")])
def test_float_images_without_a_known_scale_are_refused_when_attached(tmp_path, low, high, problem):
    path = saved(tmp_path, Image.fromarray(halves(low, high, np.float32)), "odd.tiff")
    with pytest.raises(InputError, match=problem):
        inspect_image(path)


def test_rgba_is_composited_on_white(processor, tmp_path):
    rgba = np.zeros((SIDE, SIDE, 4), dtype=np.uint8)            # left: transparent black
    rgba[:, SIDE // 2:] = (200, 0, 0, 128)                      # right: half-covering red
    path = saved(tmp_path, Image.fromarray(rgba), "clear.png")
    left, right = seen(processor, path)
    assert left == grey(255)
    assert right == (227, 127, 127)                             # 200*128/255 + 255*127/255, 255*127/255


def test_grey_with_alpha_is_composited_on_white(processor, tmp_path):
    la = np.zeros((SIDE, SIDE, 2), dtype=np.uint8)
    la[:, SIDE // 2:] = (64, 255)
    path = saved(tmp_path, Image.merge("LA", [Image.fromarray(la[..., 0]), Image.fromarray(la[..., 1])]), "la.png")
    assert seen(processor, path) == (grey(255), grey(64))


def test_palette_with_a_transparent_index(processor, tmp_path):
    image = Image.new("P", (SIDE, SIDE))
    image.putpalette([0, 0, 0, 10, 200, 30] + [0] * 762)
    image.paste(1, (SIDE // 2, 0, SIDE, SIDE))
    path = tmp_path / "palette.png"
    image.save(path, transparency=0)
    with Image.open(path) as reread:
        assert reread.mode == "P" and "transparency" in reread.info
    assert seen(processor, path) == (grey(255), (10, 200, 30))


def test_grey_with_a_transparent_colour(processor, tmp_path):
    path = tmp_path / "trns.png"
    Image.fromarray(halves(0, 64, np.uint8)).save(path, transparency=0)
    assert seen(processor, path) == (grey(255), grey(64))


def test_cmyk_becomes_rgb(processor, tmp_path):
    cmyk = np.zeros((SIDE, SIDE, 4), dtype=np.uint8)
    cmyk[:, : SIDE // 2] = (0, 255, 255, 0)                     # red
    cmyk[:, SIDE // 2:] = (0, 0, 0, 191)                        # 75 % black
    path = saved(tmp_path, Image.fromarray(cmyk, mode="CMYK"), "print.tiff")
    assert mode_of(path) == "CMYK"
    assert seen(processor, path) == ((255, 0, 0), grey(64))


def test_premultiplied_and_other_in_memory_modes():
    def one(mode, value):
        return to_rgb(Image.new(mode, (2, 2), value), "x").getpixel((0, 0))

    assert one("La", (64, 255)) == grey(64)
    assert one("RGBa", (10, 20, 30, 255)) == (10, 20, 30)
    assert one("RGBa", (0, 0, 0, 0)) == grey(255)
    assert one("PA", (0, 0)) == grey(255)
    assert one("HSV", (0, 0, 255)) == grey(255)
    assert one("YCbCr", (128, 128, 128)) == grey(128)
    assert one("LAB", (255, 128, 128)) == (254, 255, 254)       # L* 100, neutral: white, colorimetrically
    assert one("RGBX", (1, 2, 3, 0)) == (1, 2, 3)
    assert one("1", 1) == grey(255)
    assert one("I;16N", 49151) == grey(THREE_QUARTERS)


def test_a_mode_nobody_handles_is_refused_by_name():
    with pytest.raises(InputError, match=r"x.img uses the image mode 'BGR;24', which diffusion-chat does not convert"):
        to_rgb(SimpleNamespace(mode="BGR;24", info={}), "x.img")
