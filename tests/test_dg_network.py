"""DiffusionGemma network parity against the mlx-vlm goldens (tests/fixtures/golden) and the official
transformers goldens (tests/fixtures/hf), plus its masks, sanitize and config parsing.

Tolerances are those the fixtures' READMEs recommend (fixtures/README.md §7, hf/README.md §5)."""

from __future__ import annotations

import json

import mlx.core as mx
import numpy as np
import pytest
from mlx.utils import tree_flatten

from conftest import CHECKPOINTS, FIXTURES, GOLDEN
from engine.io.weights import load_tensors
from engine.errors import CheckpointError, InputError
from engine.models.diffusion_gemma import ModelConfig, Network, encoder_mask, image_run_mask

# The network goldens run on the host path and on the pure-MLX path (tests/conftest.py: both_paths).
pytestmark = pytest.mark.usefixtures("both_paths")

VARIANTS = ["dg_text", "dg_text_mlx_fp32", "dg_text_mlx_4bit"]
KV_ATOL = 1e-4
LOGITS_ATOL = 1e-3
ENTROPY_ATOL = 1e-4
TIE_MARGIN = 1e-3


def batch(array) -> mx.array:
    return mx.array(np.asarray(array))[None]


def entropy(processed: mx.array) -> np.ndarray:
    log_probs = processed - mx.logsumexp(processed, axis=-1, keepdims=True)
    return np.array(-(mx.exp(log_probs) * log_probs).sum(axis=-1))


def assert_argmax_matches(logits: mx.array, expected: np.ndarray, margin: np.ndarray):
    decided = margin > TIE_MARGIN
    assert decided.sum() > len(decided) // 2, "too few decided positions for a meaningful check"
    np.testing.assert_array_equal(np.array(mx.argmax(logits, axis=-1))[decided], expected[decided])


@pytest.fixture(scope="module", params=VARIANTS)
def variant(request, load_network):
    name = request.param
    _, network = load_network(name)
    golden = np.load(GOLDEN / name / "forward.npz")
    meta = json.loads((GOLDEN / name / "forward.json").read_text())
    cache = network.prefill(batch(golden["input_ids"]))
    return name, network, golden, meta, cache


# ---------------------------------------------------------------------------------------------------
# forward.npz (mlx-vlm) for the HF, MLX fp32 and mixed 4/8-bit layouts


def test_prefill_kv_matches_golden(variant):
    _, network, golden, _, cache = variant
    assert cache.offset == len(golden["input_ids"])
    for i, layer in enumerate(cache):
        np.testing.assert_allclose(np.array(layer.keys[0]), golden[f"kv_layer{i}_keys"], atol=KV_ATOL, rtol=0)
        np.testing.assert_allclose(np.array(layer.values[0]), golden[f"kv_layer{i}_values"], atol=KV_ATOL, rtol=0)


def test_decoder_logits_without_self_conditioning(variant):
    _, network, golden, _, cache = variant
    logits = network.denoise(batch(golden["canvas_ids"]), cache)
    assert logits.dtype == mx.float32
    assert logits.shape == (1, network.canvas_length, network.vocab_size)
    np.testing.assert_allclose(np.array(logits[0]), golden["logits_nosc"], atol=LOGITS_ATOL, rtol=0)


def test_self_conditioning_signal_matches_golden(variant):
    _, network, golden, meta, _ = variant
    assert network.self_conditioning_kind == meta["self_conditioning_kind"]
    signal = np.array(network.self_conditioning_signal(batch(golden["sc_input_logits"]))[0])
    reference = golden["sc_signal"]
    np.testing.assert_allclose(signal, reference, atol=1e-4 * np.abs(reference).max(), rtol=0)


def test_decoder_logits_with_self_conditioning(variant):
    _, network, golden, _, cache = variant
    signal = network.self_conditioning_signal(batch(golden["sc_input_logits"]))
    logits = network.denoise(batch(golden["canvas_ids"]), cache, signal)
    np.testing.assert_allclose(np.array(logits[0]), golden["logits_sc"], atol=LOGITS_ATOL, rtol=0)


def test_denoise_takes_processed_logits_as_well(variant):
    _, network, golden, _, cache = variant
    canvas, processed = batch(golden["canvas_ids"]), batch(golden["sc_input_logits"])
    via_signal = network.denoise(canvas, cache, network.self_conditioning_signal(processed))
    via_logits = network.denoise(canvas, cache, processed)
    np.testing.assert_allclose(np.array(via_logits), np.array(via_signal), atol=1e-5, rtol=0)


def test_denoise_never_writes_the_cache(variant):
    _, network, golden, _, cache = variant
    before = [np.array(a) for a in cache.arrays()]
    network.denoise(batch(golden["canvas_ids"]), cache)
    assert cache.offset == len(golden["input_ids"])
    for old, new in zip(before, cache.arrays()):
        np.testing.assert_array_equal(old, np.array(new))


def test_prefill_in_two_chunks_equals_one_prefill(load_network):
    # The second chunk starts at offset 5 and reaches past the 32-key window: exercises the windowed
    # encoder mask against cached keys, as commit() does.
    _, network = load_network("dg_text")
    golden = np.load(GOLDEN / "dg_text" / "forward.npz")
    ids = batch(golden["input_ids"])
    cache = network.prefill(ids[:, :5])
    network.prefill(ids[:, 5:], cache)
    for i, layer in enumerate(cache):
        np.testing.assert_allclose(np.array(layer.keys[0]), golden[f"kv_layer{i}_keys"], atol=KV_ATOL, rtol=0)
        np.testing.assert_allclose(np.array(layer.values[0]), golden[f"kv_layer{i}_values"], atol=KV_ATOL, rtol=0)


# ---------------------------------------------------------------------------------------------------
# The official transformers goldens


def test_official_transformers_forward(load_network):
    _, network = load_network("dg_text")
    official = np.load(FIXTURES / "hf" / "dg_text" / "forward.npz")
    cache = network.prefill(batch(official["input_ids"]))
    window = network.config.text_config.sliding_window
    for i, layer in enumerate(cache):
        expected_keys = official[f"kv_layer{i}_keys"]
        # HF's sliding cache keeps only the last window-1 positions: compare that slice.
        kept = expected_keys.shape[1]
        if network.layers[i].layer_type == "sliding_attention":
            assert kept == window - 1
        np.testing.assert_allclose(np.array(layer.keys[0, :, -kept:]), expected_keys, atol=KV_ATOL, rtol=0)
        np.testing.assert_allclose(np.array(layer.values[0, :, -kept:]), official[f"kv_layer{i}_values"],
                                   atol=KV_ATOL, rtol=0)
    canvas = batch(official["canvas_ids"])
    np.testing.assert_allclose(np.array(network.denoise(canvas, cache)[0]), official["logits_nosc"],
                               atol=LOGITS_ATOL, rtol=0)
    signal = network.self_conditioning_signal(batch(official["sc_input_logits"]))
    np.testing.assert_allclose(np.array(network.denoise(canvas, cache, signal)[0]), official["logits_sc"],
                               atol=LOGITS_ATOL, rtol=0)


# ---------------------------------------------------------------------------------------------------
# Teacher-forced steps of the mlx-vlm entropy-bound trace


@pytest.fixture(scope="module")
def trace():
    return np.load(GOLDEN / "dg_text" / "trace_entropy_bound.npz")


def check_step(network, cache, trace, block: int, step: int):
    prefix = f"b{block}_"
    signal = None if step == 0 else batch(trace[prefix + "sc_embed"][step])
    logits = network.denoise(batch(trace[prefix + "canvas_in"][step]), cache, signal)[0]
    processed = logits / float(trace[prefix + "temperature"][step])
    assert_argmax_matches(processed, trace[prefix + "argmax"][step], trace[prefix + "top1_margin"][step])
    if trace[prefix + "has_accept"][step]:
        np.testing.assert_allclose(entropy(processed), trace[prefix + "entropy"][step], atol=ENTROPY_ATOL, rtol=0)
    return logits


@pytest.mark.parametrize("step", [0, 1, 2, 24, 47])
def test_teacher_forced_block0_steps(load_network, trace, step):
    _, network = load_network("dg_text")
    cache = network.prefill(batch(trace["input_ids"]))
    logits = check_step(network, cache, trace, 0, step)
    if step in (0, 1):
        np.testing.assert_allclose(np.array(logits), trace[f"b0_raw_logits_step{step}"], atol=LOGITS_ATOL, rtol=0)


@pytest.mark.parametrize("block", [1, 2])
def test_commit_then_denoise_later_blocks(load_network, trace, block):
    _, network = load_network("dg_text")
    cache = network.prefill(batch(trace["input_ids"]))
    for earlier in range(block):
        network.commit(batch(trace[f"encoder_update_{earlier}"]), cache)
    length = network.canvas_length
    assert cache.offset == len(trace["input_ids"]) + block * length
    for step in (0, 1, 5):
        check_step(network, cache, trace, block, step)


def test_teacher_forced_step_with_quantized_embedding(load_network):
    _, network = load_network("dg_text_mlx_4bit")
    trace = np.load(GOLDEN / "dg_text_mlx_4bit" / "trace_entropy_bound.npz")
    cache = network.prefill(batch(trace["input_ids"]))
    # The logits-form self-conditioning mlx-vlm fed at step 1 (quantized soft-embedding product inside denoise).
    logits = network.denoise(batch(trace["b0_canvas_in"][1]), cache, batch(trace["b0_sc_logits_step1"]))
    np.testing.assert_allclose(np.array(logits[0]), trace["b0_raw_logits_step1"], atol=LOGITS_ATOL, rtol=0)


# ---------------------------------------------------------------------------------------------------
# Masks and the vision hooks


def test_image_run_mask_marks_each_contiguous_run():
    #        text image image text image image video text
    types = [0, 1, 1, 0, 1, 1, 2, 0]
    runs = np.array(image_run_mask(mx.array(types)))
    expected = np.zeros((8, 8), dtype=bool)
    expected[1:3, 1:3] = True
    expected[4:7, 4:7] = True      # an image run directly followed by video tokens is one run of media
    np.testing.assert_array_equal(runs, expected)
    assert image_run_mask(mx.array([0, 0, 0])) is None


def test_encoder_mask_is_causal_windowed_and_takes_the_media_overlay():
    offset, length, window, key_start = 6, 5, 4, 3
    runs = np.zeros((length, length), dtype=bool)
    runs[1:4, 1:4] = True
    mask = np.array(encoder_mask(offset, length, key_start, window, mx.array(runs)))
    expected = np.zeros((length, offset + length - key_start), dtype=bool)
    for qi, q in enumerate(range(offset, offset + length)):
        for ki, k in enumerate(range(key_start, offset + length)):
            expected[qi, ki] = (k <= q and q - k < window) or (k >= offset and runs[qi, k - offset])
    np.testing.assert_array_equal(mask, expected)
    assert encoder_mask(0, 4, 0, window=8) == "causal"


def test_media_overlay_reaches_only_the_run(load_network):
    _, network = load_network("dg_text")
    ids = batch(np.load(GOLDEN / "dg_text" / "forward.npz")["input_ids"][:12])
    types = np.zeros(12, dtype=np.int32)
    types[5:9] = 1
    plain = network.prefill(ids)
    overlaid = network.prefill(ids, token_type_ids=mx.array(types))
    keys_plain, keys_overlaid = np.array(plain[1].keys[0]), np.array(overlaid[1].keys[0])
    # Layer 1 keys depend on layer 0's attention: only run tokens that can now see later run tokens change.
    np.testing.assert_array_equal(keys_plain[:, :5], keys_overlaid[:, :5])
    assert np.abs(keys_plain[:, 5:8] - keys_overlaid[:, 5:8]).max() > 1e-3
    np.testing.assert_allclose(keys_plain[:, 8:], keys_overlaid[:, 8:], atol=1e-6)


def test_images_need_a_vision_tower(load_network):
    _, network = load_network("dg_text")
    with pytest.raises(InputError, match="no vision tower"):
        network.prefill(mx.array([[2, 105]]), pixel_values=mx.zeros((1, 3, 48, 48)))


def test_token_ids_outside_the_vocabulary_are_refused_once_at_the_prompt(load_network):
    _, network = load_network("dg_text")
    with pytest.raises(InputError, match="outside the vocabulary"):
        network.prefill(mx.array([[2, network.vocab_size]]))



# ---------------------------------------------------------------------------------------------------
# sanitize and config


def fresh_network(name: str = "dg_text") -> Network:
    return Network(ModelConfig.from_dict(json.loads((CHECKPOINTS / name / "config.json").read_text())))


def test_sanitize_maps_hf_names_and_is_idempotent():
    network = fresh_network()
    raw = load_tensors(CHECKPOINTS / "dg_text")
    assert "model.decoder.layers.0.experts.gate_up_proj" in raw
    extra = {
        "lm_head.weight": raw["model.decoder.embed_tokens.weight"],
        "model.decoder.rotary_emb.inv_freq": mx.ones((8,)),
        "model.encoder.language_model.embed_tokens.weight": raw["model.decoder.embed_tokens.weight"],
        "model.encoder.language_model.norm.weight": raw["model.decoder.norm.weight"],
        "model.encoder.vision_tower.std_bias": mx.zeros((4,)),
    }
    once = network.sanitize({**raw, **extra})
    assert "model.decoder.layers.0.experts.gate_up_proj.weight" in once
    assert "model.decoder.layers.0.experts.down_proj.weight" in once
    assert "model.encoder.language_model.layers.0.layer_scalar" in once
    assert set(once) == set(dict(tree_flatten(network.parameters())))
    twice = network.sanitize(once)
    assert set(twice) == set(once)
    for name in once:
        assert twice[name] is once[name]


def test_sanitize_stacks_per_expert_and_split_gate_up_tensors():
    network = fresh_network()
    raw = load_tensors(CHECKPOINTS / "dg_text")
    prefix = "model.decoder.layers.1.experts"
    fused, down = raw[f"{prefix}.gate_up_proj"], raw[f"{prefix}.down_proj"]
    half = fused.shape[1] // 2
    split = {k: v for k, v in raw.items() if not k.startswith(prefix)}
    for e in range(fused.shape[0]):
        split[f"{prefix}.{e}.gate_proj.weight"] = fused[e, :half]
        split[f"{prefix}.{e}.up_proj.weight"] = fused[e, half:]
        split[f"{prefix}.{e}.down_proj.weight"] = down[e]
    out = network.sanitize(split)
    np.testing.assert_array_equal(np.array(out[f"{prefix}.gate_up_proj.weight"]), np.array(fused))
    np.testing.assert_array_equal(np.array(out[f"{prefix}.down_proj.weight"]), np.array(down))
    assert set(out) == set(dict(tree_flatten(network.parameters())))


def test_model_config_reads_the_checkpoint_config():
    config = ModelConfig.from_dict(json.loads((CHECKPOINTS / "dg_text" / "config.json").read_text()))
    assert config.canvas_length == 32
    assert config.eos_token_ids == [1, 106, 50]
    assert (config.boi_token_id, config.image_token_id, config.eoi_token_id) == (505, 507, 509)
    assert config.vision_config is None
    assert config.text_config.layer_types == ["sliding_attention", "full_attention"] * 2
    assert config.text_config.rope_parameters["full_attention"]["partial_rotary_factor"] == 0.25
    network = Network(config)
    assert (network.vocab_size, network.hidden_size, network.canvas_length) == (512, 64, 32)


def test_model_config_names_a_missing_key():
    raw = json.loads((CHECKPOINTS / "dg_text" / "config.json").read_text())
    del raw["text_config"]["hidden_size"]
    with pytest.raises(CheckpointError, match="hidden_size"):
        ModelConfig.from_dict(raw)
    with pytest.raises(CheckpointError, match="text_config"):
        ModelConfig.from_dict({"model_type": "diffusion_gemma"})
