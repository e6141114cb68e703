"""scripts/demo/dequantize.py: MLX affine quantization undone with NumPy, so `train.py --init-from` can start a
fine-tune from the 8-bit bundled DiffusionGemma demo. The round trips run against MLX's own quantizer; the
loading of the bundled demo by the trainer is in tests/test_demo_trainer.py (it needs PyTorch)."""

from __future__ import annotations

import json
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

from scripts.demo import dequantize as dq

REPO_DEMO = Path(__file__).resolve().parents[1] / "tui" / "demo" / "diffusion-gemma-demo"


@pytest.mark.parametrize("bits", [2, 3, 4, 6, 8])
def test_round_trip_is_within_one_quantization_step_and_equals_mlx(bits):
    weight = mx.random.normal((3, 5, 192), key=mx.random.key(bits))
    words, scales, biases = mx.quantize(weight, group_size=64, bits=bits)
    back = dq.dequantize(np.array(words), np.array(scales), np.array(biases), bits, 64)
    assert back.shape == weight.shape and back.dtype == np.float32
    # Each entry lands within one step (the group's scale) of the original...
    error = np.abs(back - np.array(weight)).reshape(3, 5, 3, 64).max(axis=-1)
    assert (error <= np.abs(np.array(scales)) + 1e-6).all()
    # ...and is exactly what MLX itself reads back (3 and 6 bits straddle the uint32 words).
    np.testing.assert_array_equal(back, np.array(mx.dequantize(words, scales, biases, group_size=64, bits=bits)))


def test_reading_with_the_wrong_width_is_refused_or_wrong():
    weight = mx.random.normal((2, 128), key=mx.random.key(0))
    words, scales, biases = mx.quantize(weight, group_size=64, bits=4)
    with pytest.raises(ValueError):   # 16 words of 4-bit values cannot hold 128 values of 8 bits
        dq.dequantize(np.array(words), np.array(scales), np.array(biases), 8, 64)
    misread = dq.dequantize(np.array(words), np.array(scales), np.array(biases), 2, 64)
    assert np.abs(misread - np.array(weight)).max() > np.abs(np.array(scales)).max()


def test_per_module_overrides_win_over_the_defaults():
    block = {"bits": 4, "group_size": 64, "mode": "affine", "model.embed": {"bits": 8, "group_size": 32}}
    assert dq.module_settings(block, "model.embed") == (8, 32)
    assert dq.module_settings(block, "model.layers.0.q_proj") == (4, 64)
    with pytest.raises(ValueError):
        dq.quantization_of({"quantization": {"bits": 4, "group_size": 32, "mode": "mxfp4"}})


def test_the_bundled_demo_comes_back_as_float_weights_close_to_what_the_engine_runs():
    config = json.loads((REPO_DEMO / "config.json").read_text())
    assert config["quantization"]["bits"] == 8
    weights = dq.load_float_weights(REPO_DEMO)
    assert not any(name.endswith((".scales", ".biases")) for name in weights)
    assert all(value.dtype == np.float32 for value in weights.values())
    embed = weights["model.decoder.embed_tokens.weight"]
    assert embed.shape == (config["text_config"]["vocab_size"], config["text_config"]["hidden_size"])
    stored = mx.load(str(REPO_DEMO / "model.safetensors"))
    reference = mx.dequantize(stored["model.decoder.embed_tokens.weight"],
                              stored["model.decoder.embed_tokens.scales"],
                              stored["model.decoder.embed_tokens.biases"], group_size=64, bits=8)
    np.testing.assert_array_equal(embed, np.array(reference))
