"""The frame extension of `diffusion-chat serve` (engine/serve/wire.py): what the server encodes, the app decodes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.serve import wire
from engine.events import BlockCommitted, ModelInfo, Started, Stats, Step
from engine.images.budget import ImageBudget


def dg_step() -> Step:
    return Step(block=2, step=5, max_steps=48, canvas=np.array([7, 900, 3, 7], np.int32),
                candidates=np.array([7, 11, 3, 12], np.int32), accepted=np.array([True, False, True, False]),
                newly_accepted=1, scores=np.array([0.01, 2.5, np.inf, 0.123456], np.float32), score_kind="entropy",
                temperature=0.6, noise_is_mask=False)


def llada_step() -> Step:
    return Step(block=0, step=0, max_steps=32, canvas=np.array([1, 2, 9, 9], np.int32),
                candidates=np.array([1, 2, 5, 6], np.int32), accepted=np.array([True, True, False, False]),
                newly_accepted=0, scores=np.array([1.0, 1.0, 0.4, 0.2], np.float32), score_kind="confidence",
                temperature=None, noise_is_mask=True, prompt_positions=2)


@pytest.mark.parametrize("make", [dg_step, llada_step])
def test_a_frame_survives_json_and_carries_the_text_of_every_id(make):
    step = make()
    encoded = json.loads(json.dumps(wire.encode_frame(step, lambda i: f"<{i}>"), allow_nan=False))
    decoded, texts = wire.decode_frame(encoded)
    for name in ("block", "step", "max_steps", "newly_accepted", "score_kind", "temperature", "noise_is_mask",
                 "prompt_positions"):
        assert getattr(decoded, name) == getattr(step, name), name
    for name in ("canvas", "candidates", "accepted"):
        assert np.array_equal(getattr(decoded, name), getattr(step, name)), name
    finite = np.isfinite(step.scores)
    np.testing.assert_allclose(decoded.scores[finite], step.scores[finite], atol=1e-4)
    assert np.isnan(decoded.scores[~finite]).all()  # inf is not JSON: sent as null, read as "unsure"
    assert texts == {i: f"<{i}>" for i in {*step.canvas.tolist(), *step.candidates.tolist()}}


def test_started_block_and_stats_round_trip():
    started = Started(prompt_tokens=24, encoded_tokens=3, prefill_s=0.25, block_length=256)
    assert wire.decode_started(json.loads(json.dumps(wire.encode_started(started)))) == started
    block = BlockCommitted(block=1, token_ids=(5, 6), committed=(5, 6), content_delta="hi", reasoning_delta="hm",
                           steps=7, stop_reason="stable_and_confident")
    assert wire.decode_block(json.loads(json.dumps(wire.encode_block(block))), "hi", "hm") == block
    stats = Stats(steps_per_block=(7, 3), prompt_tokens=24, generated_tokens=40, work_tokens=320, prefill_s=0.5,
                  denoise_s=1.25, total_s=2.0, peak_memory_bytes=1 << 20)
    assert wire.decode_stats(json.loads(json.dumps(wire.encode_stats(stats, "cancelled")))) == (stats, "cancelled")


def test_a_block_carries_its_accepted_per_step_and_edits_and_older_servers_decode_without_them():
    block = BlockCommitted(block=0, token_ids=(5, 6, 7), committed=(5, 6, 7), content_delta="abc",
                           reasoning_delta="", steps=3, stop_reason="max_denoising_steps",
                           accepted_per_step=(16, 8, 8), edits=2)
    encoded = json.loads(json.dumps(wire.encode_block(block)))
    assert encoded["accepted_per_step"] == [16, 8, 8] and encoded["edits"] == 2
    assert wire.decode_block(encoded, "abc", "") == block
    older = {key: value for key, value in encoded.items() if key not in ("accepted_per_step", "edits")}
    decoded = wire.decode_block(older, "abc", "")
    assert decoded.accepted_per_step == () and decoded.edits == 0
    with pytest.raises(wire.WireError):
        wire.decode_block({**encoded, "accepted_per_step": ["many"]}, "abc", "")


def test_the_model_description_becomes_a_remote_model_info():
    info = ModelInfo(name="m", family="diffusion_gemma", label="DiffusionGemma", supports_images=True,
                     setting_defaults={"max_tokens": 256, "temp": 1.0}, token_texts=("a", "b"),
                     image_budget=ImageBudget(70, 16, 3))
    remote = wire.decode_model("m", json.loads(json.dumps(wire.encode_model(info, ["temp", "max_tokens"]))), [])
    assert (remote.family, remote.supports_images, remote.image_budget) == ("diffusion_gemma", True, info.image_budget)
    assert remote.remote and remote.frames and remote.offered_settings == ("temp", "max_tokens")
    assert dict(remote.setting_defaults) == {"max_tokens": 256, "temp": 1.0}


@pytest.mark.parametrize("broken", [
    {},
    {**wire.encode_frame(dg_step(), str), "canvas": [1, 2]},           # arrays of different lengths
    {**wire.encode_frame(dg_step(), str), "score_kind": "vibes"},
    {**wire.encode_frame(dg_step(), str), "texts": ["not", "a", "map"]},
])
def test_a_malformed_frame_is_one_wire_error(broken):
    with pytest.raises(wire.WireError):
        wire.decode_frame(broken)
