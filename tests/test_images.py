"""Image processor, attachment checks and prompt expansion (engine/images/processor.py) against the dg_vision fixture."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest
from PIL import Image

from engine.errors import InputError
from engine.images.processor import (
    ImageInfo,
    ImageProcessor,
    expand_prompt,
    image_runs,
    inspect_image,
    soft_token_count,
    target_size,
)

FIXTURES = Path(__file__).parent / "fixtures"
CHECKPOINT = FIXTURES / "checkpoints" / "dg_vision"
GOLDEN = FIXTURES / "golden" / "dg_vision"
IMAGE = GOLDEN / "image.png"


@pytest.fixture(scope="module")
def golden():
    return np.load(GOLDEN / "vision.npz"), json.loads((GOLDEN / "vision.json").read_text())


@pytest.fixture(scope="module")
def processor():
    return ImageProcessor.from_checkpoint(CHECKPOINT, json.loads((CHECKPOINT / "config.json").read_text()))


# --- processor ---------------------------------------------------------------------------------------

def test_processor_reads_checkpoint_settings(processor):
    assert processor.max_soft_tokens == 70
    assert (processor.patch_size, processor.pooling_kernel_size) == (16, 3)
    assert (processor.image_token_id, processor.boi_token_id, processor.eoi_token_id) == (507, 505, 509)
    assert processor.resample == Image.Resampling.BICUBIC


def test_preprocess_matches_reference_pixels(processor, golden):
    arrays, meta = golden
    pixels, n_tokens = processor.preprocess(IMAGE)
    expected = arrays["pixel_values"]
    assert pixels.dtype == mx.float32
    assert tuple(pixels.shape) == tuple(expected.shape) == tuple(meta["pixel_values_shape"])
    np.testing.assert_allclose(np.array(pixels), expected, rtol=0, atol=1e-6)
    assert n_tokens == meta["num_image_soft_tokens"] == 63


def test_processor_falls_back_to_vision_config_without_processor_file(tmp_path):
    config = {"image_token_id": 7, "boi_token_id": 8, "eoi_token_id": 9,
              "vision_config": {"patch_size": 14, "pooling_kernel_size": 2, "default_output_length": 100}}
    processor = ImageProcessor.from_checkpoint(tmp_path, config)
    assert (processor.max_soft_tokens, processor.patch_size, processor.pooling_kernel_size) == (100, 14, 2)
    assert processor.soft_token_count(640, 640) <= 100


@pytest.mark.parametrize("size, budget, expected_size, expected_tokens", [
    ((1000, 1000), 280, (768, 768), 256),   # a square image: 48x48 patches
    ((1024, 768), 280, (912, 672), 266),
    ((200, 150), 70, (432, 336), 63),       # the fixture image
    ((10000, 1), 70, (3360, 48), 70),       # thin: one pooled row, as long as the budget allows
    ((1, 10000), 70, (48, 3360), 70),
])
def test_target_size_and_token_count(size, budget, expected_size, expected_tokens):
    assert target_size(*size, max_soft_tokens=budget) == expected_size
    assert soft_token_count(*size, max_soft_tokens=budget) == expected_tokens


def test_any_aspect_ratio_fits_the_budget():
    rng = np.random.default_rng(0)
    for width, height in rng.integers(1, 5000, size=(200, 2)):
        for budget in (70, 280):
            new_width, new_height = target_size(int(width), int(height), max_soft_tokens=budget)
            assert new_width % 48 == 0 and new_height % 48 == 0 and new_width > 0 and new_height > 0
            assert (new_width // 16) * (new_height // 16) <= budget * 9
            assert soft_token_count(int(width), int(height), max_soft_tokens=budget) == (new_width // 48) * (new_height // 48)


@pytest.mark.parametrize("mode", ["RGBA", "L", "P", "CMYK", "I;16"])
def test_preprocess_converts_any_mode_to_rgb(tmp_path, processor, mode):
    path = tmp_path / f"image_{mode.replace(';', '')}.png" if mode != "CMYK" else tmp_path / "image.jpg"
    Image.new(mode, (97, 61)).save(path)
    pixels, n_tokens = processor.preprocess(path)
    assert pixels.shape[0] == 3 and pixels.shape[1] % 48 == 0 and pixels.shape[2] % 48 == 0
    assert n_tokens == processor.soft_token_count(97, 61) == (pixels.shape[1] // 48) * (pixels.shape[2] // 48)
    values = np.array(pixels)
    assert values.min() >= 0.0 and values.max() <= 1.0


def test_exif_orientation_is_applied(tmp_path, processor):
    path = tmp_path / "rotated.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # stored landscape, shown rotated 90 degrees: portrait
    Image.new("RGB", (300, 100), (200, 10, 10)).save(path, exif=exif.tobytes())
    info = inspect_image(path)
    assert (info.width, info.height) == (100, 300)
    pixels, _ = processor.preprocess(path)
    assert pixels.shape[1] > pixels.shape[2]  # taller than wide


# --- prompt expansion --------------------------------------------------------------------------------

def _collapsed(ids, boi, image, eoi):
    """The prompt as the chat template writes it: each expanded image back to one placeholder."""
    out, inside = [], False
    for token in ids:
        if token == boi:
            inside = True
            out.append(image)
        elif token == eoi:
            inside = False
        elif not inside:
            out.append(token)
    return out


def test_expand_prompt_reproduces_reference_ids(golden):
    arrays, meta = golden
    reference = [int(t) for t in arrays["input_ids"]]
    compact = _collapsed(reference, 505, 507, 509)
    assert compact.count(507) == 1 and len(compact) < len(reference)
    ids, token_types = expand_prompt(compact, 507, 505, 509, [meta["num_image_soft_tokens"]])
    assert ids == reference == meta["input_ids"]
    assert token_types == [int(t) for t in arrays["mm_token_type_ids"]]
    assert image_runs(token_types) == [(meta["image_token_positions"][0], meta["image_token_positions"][1] + 1)]


def test_expand_prompt_several_images_in_order():
    ids, token_types = expand_prompt([2, 7, 50, 7, 51], image_token_id=7, boi_id=5, eoi_id=9, counts=[2, 3])
    assert ids == [2, 5, 7, 7, 9, 50, 5, 7, 7, 7, 9, 51]
    assert token_types == [0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0]
    assert image_runs(token_types) == [(2, 4), (7, 10)]


def test_expand_prompt_refuses_count_mismatch():
    with pytest.raises(InputError, match="2 image placeholder"):
        expand_prompt([7, 1, 7], 7, 5, 9, [4])


def test_image_runs_edges():
    assert image_runs([]) == []
    assert image_runs([1, 1, 0, 1]) == [(0, 2), (3, 4)]


def test_prepare_prompt_builds_chat_prompt(processor):
    prompt = processor.prepare_prompt([2, 507, 100, 507], "text", [IMAGE, IMAGE])
    assert prompt.image_tokens == [63, 63]
    assert len(prompt.pixel_values) == 2 and tuple(prompt.pixel_values[0].shape) == (3, 336, 432)
    assert len(prompt.ids) == 1 + 2 * (63 + 2) + 1 == len(prompt.token_type_ids)
    assert sum(prompt.token_type_ids) == 126 and prompt.text == "text"


# --- attachment checks -------------------------------------------------------------------------------

def test_inspect_image_describes_the_fixture():
    info = inspect_image(IMAGE)
    assert info == ImageInfo(name="image.png", bytes=IMAGE.stat().st_size, width=200, height=150)


def _png_with_header(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00" * 16)) + chunk(b"IEND", b"")


def _wav_bytes() -> bytes:
    samples = b"\x00\x00" * 800
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _mp4_bytes() -> bytes:
    ftyp = b"ftypisom" + b"\x00\x00\x02\x00" + b"isomiso2avc1mp41"
    return struct.pack(">I", len(ftyp) + 4) + ftyp + struct.pack(">I", 8) + b"mdat"


def _truncated_png(tmp_path: Path) -> Path:
    full = tmp_path / "full.png"
    rng = np.random.default_rng(1)
    Image.fromarray(rng.integers(0, 255, (120, 160, 3), dtype=np.uint8)).save(full)
    data = full.read_bytes()
    path = tmp_path / "cut.png"
    path.write_bytes(data[: len(data) // 2])
    return path


def _refusal_cases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    (tmp_path / "folder.png").mkdir()
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "notes.png").write_text("these are words, not pixels\n" * 20)
    (tmp_path / "sound.wav").write_bytes(_wav_bytes())
    (tmp_path / "sound_named.png").write_bytes(_wav_bytes())
    (tmp_path / "clip.mp4").write_bytes(_mp4_bytes())
    (tmp_path / "clip_named.jpg").write_bytes(_mp4_bytes())
    (tmp_path / "bomb.png").write_bytes(_png_with_header(100_000, 100_000))
    return {
        "missing": (tmp_path / "nope.png", "not found"),
        "directory": (tmp_path / "folder.png", "folder"),
        "empty": (tmp_path / "empty.png", "empty"),
        "not an image": (tmp_path / "notes.png", "not an image"),
        "truncated": (_truncated_png(tmp_path), "truncated"),
        "bomb": (tmp_path / "bomb.png", "too large"),
        "wav": (tmp_path / "sound.wav", "audio/video files are not supported"),
        "wav renamed": (tmp_path / "sound_named.png", "audio/video files are not supported"),
        "mp4": (tmp_path / "clip.mp4", "audio/video files are not supported"),
        "mp4 renamed": (tmp_path / "clip_named.jpg", "audio/video files are not supported"),
    }


CASES = ["missing", "directory", "empty", "not an image", "truncated", "bomb", "wav", "wav renamed", "mp4",
         "mp4 renamed"]


@pytest.mark.parametrize("case", CASES)
def test_refusals_are_one_clear_line(tmp_path, processor, case):
    path, expected = _refusal_cases(tmp_path)[case]
    for check in (inspect_image, processor.preprocess):
        with pytest.raises(InputError) as caught:
            check(path)
        message = str(caught.value)
        assert expected in message and "\n" not in message and len(message) < 200


def test_bomb_warning_range_is_refused(tmp_path, monkeypatch, processor):
    """Between 1x and 2x Pillow's limit Pillow only warns; we refuse just the same."""
    path = tmp_path / "big.png"
    Image.new("RGB", (64, 64)).save(path)
    assert inspect_image(path).width == 64
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 64 * 64 - 1)
    for check in (inspect_image, processor.preprocess):
        with pytest.raises(InputError, match="too large"):
            check(path)
