"""LLaDA-2 MoE network: config defaults, checkpoint layouts, and parity with the recorded forwards.

Goldens: tests/fixtures/golden/<variant>/forward.npz (mlx-vlm, prefix KV cache + block forward) and
tests/fixtures/hf/llada2/forward.npz (the official remote code, whole window with the block-causal mask).
Tolerances are the ones the fixtures README recommends (§7 there, §5 of hf/README.md).
"""

import json

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest
from conftest import CHECKPOINTS, FIXTURES, GOLDEN

import engine
from engine.errors import CheckpointError
from engine.models.layers import QuantizedSwitchLinear
from engine.models.llada2_moe import (
    DEFAULT_MASK_TOKEN_ID,
    DEFAULT_PAD_TOKEN_ID,
    Gate,
    ModelConfig,
    Network,
    SparseMoeBlock,
    block_causal_mask,
)

# The network goldens run on the host path and on the pure-MLX path (tests/conftest.py: both_paths).
pytestmark = pytest.mark.usefixtures("both_paths")

PARITY_VARIANTS = ["llada2", "llada2_mlx_fp32", "llada2_mlx_4bit"]
HF_FORWARD = FIXTURES / "hf" / "llada2" / "forward.npz"
BLOCK = 32


def _ids(array) -> mx.array:
    return mx.array(np.asarray(array, dtype=np.int32)[None])


def _max_diff(a, b) -> float:
    return float(np.abs(np.asarray(a, dtype=np.float32) - np.asarray(b, dtype=np.float32)).max())


# ---- config -----------------------------------------------------------------------------------------------------

def test_config_without_mask_and_eos_uses_documented_defaults():
    # Real config.json files carry neither id; HF's config-class defaults must not leak in either.
    config = ModelConfig.from_dict({"model_type": "llada2_moe", "hidden_size": 2048, "num_attention_heads": 16})
    assert config.mask_token_id == DEFAULT_MASK_TOKEN_ID == 156895
    assert config.eos_token_ids == (DEFAULT_PAD_TOKEN_ID,) == (156892,)
    assert (config.head_dim, config.rotary_dim) == (128, 64)
    assert config.rms_norm_eps == 1e-6 and config.rope_theta == 600000 and config.use_qk_norm
    assert (config.num_experts, config.num_experts_per_tok, config.n_group, config.topk_group) == (256, 8, 8, 4)


def test_config_reads_present_ids_and_nested_rope():
    config = ModelConfig.from_dict({
        "mask_token_id": 7, "pad_token_id": 3, "eos_token_id": [3, 9], "head_dim": None,
        "rope_parameters": {"rope_theta": 1000.0, "partial_rotary_factor": 0.25},
        "hidden_size": 64, "num_attention_heads": 4, "unknown_key": 1,
    })
    assert config.mask_token_id == 7 and config.eos_token_ids == (3, 9)
    assert config.rope_theta == 1000.0 and config.head_dim == 16 and config.rotary_dim == 4


def test_config_refuses_unsupported_router():
    with pytest.raises(CheckpointError, match="score_function"):
        ModelConfig.from_dict({"score_function": "softmax"})
    with pytest.raises(CheckpointError, match="n_group"):
        ModelConfig.from_dict({"num_experts": 10, "n_group": 4})


# ---- router and experts -------------------------------------------------------------------------------------------

def test_gate_worked_example():
    # Reference §4.6: the bias lets expert 5 beat expert 4, group masking excludes expert 2; weights sum to 2.5.
    gate = Gate(ModelConfig(hidden_size=8, num_experts=8, n_group=4, topk_group=2, num_experts_per_tok=2))
    weight = np.zeros((8, 8), np.float32)
    weight[:, 0] = [2.0, -2.0, 1.5, -3.0, 0.8, 0.4, -1.5, -1.8]
    gate.weight = mx.array(weight)
    gate.expert_bias = mx.array(np.eye(8, dtype=np.float32)[5] * 0.5)
    indices, weights = gate(mx.array(np.eye(8, dtype=np.float32)[:1]))
    chosen = dict(zip(np.array(indices[0]).tolist(), np.array(weights[0]).tolist()))
    assert sorted(chosen) == [0, 5]
    assert chosen[0] == pytest.approx(1.48835, abs=1e-4) and chosen[5] == pytest.approx(1.01165, abs=1e-4)


def test_group_masking_puts_dropped_groups_last_even_when_kept_scores_are_negative():
    # A strongly negative bias on every kept expert must not let a dropped group's expert win (zeroing would).
    gate = Gate(ModelConfig(hidden_size=4, num_experts=4, n_group=2, topk_group=1, num_experts_per_tok=2))
    gate.weight = mx.zeros((4, 4))
    gate.expert_bias = mx.array([-5.0, -5.0, -9.0, -9.0])
    indices, _ = gate(mx.zeros((1, 4)))
    assert sorted(np.array(indices[0]).tolist()) == [0, 1]


@pytest.mark.parametrize("tokens", [1, 40])  # 40 tokens x top-2 takes the sorted gather path
def test_moe_block_equals_naive_expert_loop(tokens):
    config = ModelConfig(hidden_size=16, num_experts=8, n_group=4, topk_group=2, num_experts_per_tok=2,
                         moe_intermediate_size=8, num_shared_experts=1)
    mx.random.seed(3)
    block = SparseMoeBlock(config)
    block.gate.weight = mx.random.normal((8, 16))
    block.gate.expert_bias = mx.random.normal((8,)) * 0.1
    x = mx.random.normal((1, tokens, 16))
    indices, weights = block.gate(x)
    experts = block.switch_mlp
    expected = np.array(block.shared_experts(x))
    for t in range(tokens):
        for j in range(2):
            e = int(indices[0, t, j])
            h = x[0, t]
            gate, up = mx.split(experts.gate_up_proj.weight[e], 2, axis=0)
            out = experts.down_proj.weight[e] @ (nn.silu(gate @ h) * (up @ h))
            expected[0, t] += float(weights[0, t, j]) * np.array(out)
    np.testing.assert_allclose(np.array(block(x)), expected, atol=1e-5)


# ---- attention structure ------------------------------------------------------------------------------------------

def test_block_causal_mask():
    mask = np.array(block_causal_mask(0, 8, 4))
    assert mask[0, 3] and mask[5, 0] and mask[5, 7]  # own block both ways, earlier blocks visible
    assert not mask[0, 4] and not mask[3, 7]         # later blocks hidden
    # continuing after a cached prefix of one block
    later = np.array(block_causal_mask(4, 4, 4))
    assert later.shape == (4, 8) and later.all()


def test_multi_block_prefill_equals_block_by_block(load_network):
    _, net = load_network("llada2")
    window = _ids(np.load(HF_FORWARD)["window_ids_canvas"])
    together = net.prefill(window)
    one_by_one = net.prefill(window[:, :BLOCK])
    offset = one_by_one.offset
    net.denoise(window[:, BLOCK:], one_by_one)
    assert one_by_one.offset == offset  # denoising never writes the cache
    net.commit(window[:, BLOCK:], one_by_one)
    assert together.offset == one_by_one.offset == 2 * BLOCK
    for a, b in zip(together, one_by_one):
        assert _max_diff(a.keys, b.keys) < 1e-5 and _max_diff(a.values, b.values) < 1e-5


def test_prefill_writes_only_the_whole_prompt_blocks(load_network):
    _, net = load_network("llada2")
    prompt = mx.arange(BLOCK + 3, dtype=mx.int32)[None] + 10
    cache = net.prefill(prompt)
    assert cache.offset == BLOCK
    whole = net.prefill(prompt[:, :BLOCK])
    for a, b in zip(cache, whole):
        assert _max_diff(a.keys, b.keys) == 0 and _max_diff(a.values, b.values) == 0
    with pytest.raises(ValueError):  # a cache must stay block-aligned
        net.prefill(prompt, cache=_misaligned(net))


def _misaligned(net):
    cache = net.make_cache(BLOCK)
    net.commit(mx.zeros((1, 5), dtype=mx.int32), cache)
    return cache


# ---- parity with mlx-vlm --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", PARITY_VARIANTS)
def test_prefix_cache_and_block_denoising_logits_match_mlx_vlm(load_network, variant):
    config, net = load_network(variant)
    golden = np.load(GOLDEN / variant / "forward.npz")
    prompt = golden["input_ids"]
    cache = net.prefill(_ids(prompt[: len(prompt) // BLOCK * BLOCK]))
    assert cache.offset == BLOCK
    for i in range(config.num_hidden_layers):
        assert _max_diff(cache[i].keys[0], golden[f"prefix_kv_layer{i}_keys"]) < 1e-4
        assert _max_diff(cache[i].values[0], golden[f"prefix_kv_layer{i}_values"]) < 1e-4
    for name in ("masked", "canvas"):
        logits = net.denoise(_ids(golden[f"block_{name}_ids"]), cache)
        assert logits.dtype == mx.float32 and logits.shape == (1, BLOCK, config.vocab_size)
        assert _max_diff(logits[0], golden[f"logits_block_{name}"]) < 3e-3


@pytest.mark.parametrize("variant", PARITY_VARIANTS)
def test_layer_outputs_and_router_picks_match_mlx_vlm(load_network, variant):
    config, net = load_network(variant)
    golden = np.load(GOLDEN / variant / "forward.npz")
    model = net.language_model.model
    h = model.word_embeddings(_ids(golden["input_ids"][:BLOCK]))
    moe_layer = 0
    for i, layer in enumerate(model.layers):
        if i >= config.first_k_dense_replace:
            after_attention = h + layer.attention(layer.input_layernorm(h), None, None, False)
            indices, weights = layer.mlp.gate(layer.post_attention_layernorm(after_attention))
            picks = np.sort(np.array(indices[0]), axis=-1)
            expected = np.sort(golden["prefix__gate_topk_idx"][moe_layer], axis=-1)
            np.testing.assert_array_equal(picks, expected)
            # compare weights expert by expert (orders differ)
            ours = np.take_along_axis(np.array(weights[0]), np.argsort(np.array(indices[0]), axis=-1), axis=-1)
            order = np.argsort(golden["prefix__gate_topk_idx"][moe_layer], axis=-1)
            theirs = np.take_along_axis(golden["prefix__gate_topk_weight"][moe_layer], order, axis=-1)
            assert _max_diff(ours, theirs) < 1e-4
            moe_layer += 1
        h = layer(h, None, None, False)
        assert _max_diff(h[0], golden["prefix__layer_out"][i]) < 5e-4
    assert _max_diff(model.norm(h)[0], golden["prefix_hidden"]) < 5e-4


# ---- parity with the official implementation ------------------------------------------------------------------------

def test_block_denoising_logits_match_official_forward(load_network):
    _, net = load_network("llada2")
    official = np.load(HF_FORWARD)
    for name in ("masked", "canvas"):
        window = official[f"window_ids_{name}"]
        cache = net.prefill(_ids(window[:BLOCK]))
        logits = net.denoise(_ids(window[BLOCK:]), cache)
        assert _max_diff(logits[0], official[f"logits_block_{name}"]) < 2e-3


def test_whole_window_forward_matches_official(load_network):
    _, net = load_network("llada2")
    official = np.load(HF_FORWARD)
    window = _ids(official["window_ids_masked"])
    # the official generate() forwards the whole window with the additive block-causal mask
    mask = np.array(block_causal_mask(0, window.shape[1], BLOCK))
    np.testing.assert_array_equal(mask, official["block_causal_mask_additive"] == 0)
    logits = net.language_model(window, mask=mx.array(mask))
    assert _max_diff(logits[0], official["logits_window_masked"]) < 2e-3
    # with no mask at all the forward is fully bidirectional
    assert _max_diff(net.language_model(window)[0], official["logits_full_bidirectional"]) < 2e-3


# ---- checkpoint layouts ------------------------------------------------------------------------------------------

def _tiny_config() -> ModelConfig:
    return ModelConfig.from_dict(json.loads((CHECKPOINTS / "llada2" / "config.json").read_text()))


def test_sanitize_stacks_hf_experts_and_is_idempotent():
    network = Network(_tiny_config())
    raw = mx.load(str(CHECKPOINTS / "llada2" / "model.safetensors"))
    raw["model.layers.0.attention.rotary_emb.inv_freq"] = mx.ones((4,))
    once = network.sanitize(raw)
    assert network.sanitize(once).keys() == once.keys()
    assert all(k.startswith("language_model.") and ".experts." not in k and "inv_freq" not in k for k in once)
    stacked = once["language_model.model.layers.1.mlp.switch_mlp.down_proj.weight"]
    assert stacked.shape == (8, 64, 64)
    # expert e lands at index e
    np.testing.assert_array_equal(np.array(stacked[5]), np.array(raw["model.layers.1.mlp.experts.5.down_proj.weight"]))
    assert "language_model.model.layers.1.mlp.gate.expert_bias" in once
    assert "language_model.lm_head.weight" in once  # untied head kept
    # gate and up become one [experts, 2I, H] weight, gate first
    fused = once["language_model.model.layers.1.mlp.switch_mlp.gate_up_proj.weight"]
    np.testing.assert_array_equal(np.array(fused[5, :64]), np.array(raw["model.layers.1.mlp.experts.5.gate_proj.weight"]))
    np.testing.assert_array_equal(np.array(fused[5, 64:]), np.array(raw["model.layers.1.mlp.experts.5.up_proj.weight"]))
    assert not any(".switch_mlp.gate_proj." in k or ".switch_mlp.up_proj." in k for k in once)


def test_sanitize_fuses_an_mlx_conversions_stacked_quantized_gate_and_up_exactly():
    # mlx-lm style conversions store switch_mlp.{gate,up}_proj already stacked (and quantized): concatenating
    # weight, scales and biases along the output axis must dequantize to the two halves bit for bit.
    network = Network(_tiny_config())
    gate, up = mx.random.normal((8, 32, 64)), mx.random.normal((8, 32, 64))
    raw = {}
    for name, w in (("gate_proj", gate), ("up_proj", up)):
        q, scales, biases = mx.quantize(w, group_size=32, bits=4)
        raw.update({f"model.layers.1.mlp.switch_mlp.{name}.weight": q,
                    f"model.layers.1.mlp.switch_mlp.{name}.scales": scales,
                    f"model.layers.1.mlp.switch_mlp.{name}.biases": biases})
    out = network.sanitize(raw)
    prefix = "language_model.model.layers.1.mlp.switch_mlp.gate_up_proj."
    fused = mx.dequantize(out[prefix + "weight"], out[prefix + "scales"], out[prefix + "biases"], group_size=32, bits=4)
    halves = [mx.dequantize(raw[f"model.layers.1.mlp.switch_mlp.{n}.weight"], raw[f"model.layers.1.mlp.switch_mlp.{n}.scales"],
                            raw[f"model.layers.1.mlp.switch_mlp.{n}.biases"], group_size=32, bits=4)
              for n in ("gate_proj", "up_proj")]
    np.testing.assert_array_equal(np.array(fused), np.array(mx.concatenate(halves, axis=1)))


def test_sanitize_accepts_embed_tokens_and_reports_a_missing_expert():
    network = Network(_tiny_config())
    raw = mx.load(str(CHECKPOINTS / "llada2" / "model.safetensors"))
    raw["model.embed_tokens.weight"] = raw.pop("model.word_embeddings.weight")
    assert "language_model.model.word_embeddings.weight" in network.sanitize(dict(raw))
    del raw["model.layers.2.mlp.experts.3.up_proj.weight"]
    with pytest.raises(CheckpointError, match="experts.3.up_proj"):
        network.sanitize(raw)


def test_load_reports_attributes():
    model = engine.load(CHECKPOINTS / "llada2")
    net = model.network
    assert model.family == "llada2_moe"
    assert (net.vocab_size, net.mask_token_id, net.eos_token_ids) == (512, 495, (492,))
    assert net.config.num_hidden_layers == len(net.language_model.model.layers) == 3


def test_quantized_checkpoint_quantizes_exactly_the_stored_modules(load_network):
    _, net = load_network("llada2_mlx_4bit")
    model = net.language_model.model
    assert isinstance(model.word_embeddings, nn.QuantizedEmbedding)
    assert isinstance(net.language_model.lm_head, nn.QuantizedLinear)
    assert isinstance(model.layers[1].mlp.switch_mlp.gate_up_proj, QuantizedSwitchLinear)
    assert isinstance(model.layers[1].attention.query_key_value, nn.QuantizedLinear)
    # the router is a raw float matrix, never quantized
    assert model.layers[1].mlp.gate.weight.dtype == mx.float32 and model.layers[1].mlp.gate.weight.shape == (8, 64)


def test_bf16_checkpoint_loads_and_runs_close_to_fp32(load_network):
    # Loader-only fixture (no golden): the bf16 MoE must run on CPU (weights upcast) and stay near fp32.
    _, net = load_network("llada2_mlx_bf16")
    assert net.language_model.model.layers[1].mlp.switch_mlp.gate_up_proj.weight.dtype == mx.float32
    golden = np.load(GOLDEN / "llada2" / "forward.npz")
    cache = net.prefill(_ids(golden["input_ids"][:BLOCK]))
    logits = np.array(net.denoise(_ids(golden["block_masked_ids"]), cache)[0])
    reference = golden["logits_block_masked"]
    assert np.isfinite(logits).all()
    assert np.corrcoef(logits.ravel(), reference.ravel())[0, 1] > 0.95
    assert (logits.argmax(-1) == reference.argmax(-1)).mean() > 0.85
