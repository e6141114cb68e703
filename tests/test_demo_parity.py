"""The PyTorch demo networks (scripts/demo/torch_*.py) compute what the engine computes.

tests/fixtures/demo_parity/<family>/ holds a checkpoint exported from a random PyTorch network
(scripts/demo/check_parity.py; regenerate with `/work/trainenv/bin/python -m scripts.demo.check_parity`)
and parity.npz: inputs and the PyTorch logits. Here the engine loads the folder like any checkpoint and
replays the inputs through its *inference* calls; in particular the block-parallel training forward
(every canvas / block of a row denoised at once under the training masks) must equal the sequential
inference path (prefill -> denoise -> commit -> denoise ...), i.e. training sees what generation sees.
No torch import: this runs in the engine's environment.
"""

from __future__ import annotations

import json

import mlx.core as mx
import numpy as np
import pytest

from conftest import FIXTURES
from engine.io.checkpoint import read_configs
from engine.io.loader import build_network

PARITY = FIXTURES / "demo_parity"
ATOL = 1e-4   # max |logit difference|; the fixtures are bfloat16 weights computed in float32 on both sides


@pytest.fixture(scope="module")
def cpu_device():
    """The fixtures are bfloat16: on CPU the loader upcasts them to float32, as PyTorch computed them."""
    previous = mx.default_device()
    mx.set_default_device(mx.cpu)
    yield
    mx.set_default_device(previous)


def load(family: str):
    _, config, network = build_network(read_configs(PARITY / family))
    return config, network, np.load(PARITY / family / "parity.npz")


def ids(array) -> mx.array:
    return mx.array(np.asarray(array, dtype=np.int32))[None]


def assert_close(actual: mx.array, expected: np.ndarray):
    difference = float(np.max(np.abs(np.array(actual, dtype=np.float32) - expected)))
    assert difference <= ATOL, f"max |engine - torch| = {difference:.3g}"


@pytest.mark.parametrize("family", ["diffusion_gemma", "llada2_moe"])
def test_exported_folder_is_a_complete_checkpoint(family, cpu_device):
    """scripts/demo/export.py writes what `engine.load` needs (tokenizer files copied from the fixtures)."""
    import engine

    model = engine.load(PARITY / family)
    assert model.family == family and model.tokenizer is not None
    assert json.loads((PARITY / family / "config.json").read_text())["dtype"] == "bfloat16"


# ---------------------------------------------------------------------------------------------------
# DiffusionGemma


@pytest.fixture(scope="module")
def dg(cpu_device):
    return load("diffusion_gemma")


def test_dg_fixture_exercises_the_window(dg):
    config, _, data = dg
    rows = data["block_prompts"] + data["block_counts"] * config.canvas_length
    assert config.text_config.sliding_window < rows.min()
    assert set(config.text_config.layer_types) == {"sliding_attention", "full_attention"}


def test_dg_one_canvas_matches_prefill_and_denoise(dg):
    _, network, data = dg
    cache = network.prefill(ids(data["single_prompt"]))
    logits = network.denoise(ids(data["single_canvas"]), cache)
    assert_close(logits[0], data["single_logits"])


def test_dg_self_conditioning_matches(dg):
    _, network, data = dg
    cache = network.prefill(ids(data["single_prompt"]))
    processed = mx.array(data["single_logits"])[None] / mx.array(data["temperature"])
    signal = network.self_conditioning_signal(processed)
    logits = network.denoise(ids(data["single_canvas"]), cache, self_conditioning=signal)
    assert_close(logits[0], data["single_sc_logits"])
    # The signal changes the output, so the comparison above is not vacuous.
    assert np.abs(data["single_sc_logits"] - data["single_logits"]).max() > 0.1


@pytest.mark.parametrize("self_conditioned", [False, True])
def test_dg_block_parallel_training_equals_sequential_inference(dg, self_conditioned):
    config, network, data = dg
    canvas = config.canvas_length
    expected = data["block_sc_logits" if self_conditioned else "block_logits"]
    actual = []
    for row, (prompt, blocks) in enumerate(zip(data["block_prompts"], data["block_counts"])):
        clean, noisy = data["block_clean"][row], data["block_noisy"][row]
        cache = network.prefill(ids(clean[:prompt]))
        for block in range(blocks):
            span = slice(prompt + block * canvas, prompt + (block + 1) * canvas)
            signal = None
            if self_conditioned:
                # The torch pass took block_logits / T at the same positions as its previous step.
                previous = data["block_logits"][len(actual) * canvas:(len(actual) + 1) * canvas]
                signal = network.self_conditioning_signal(mx.array(previous)[None] / mx.array(data["temperature"]))
            actual.append(network.denoise(ids(noisy[span]), cache, self_conditioning=signal)[0])
            network.commit(ids(clean[span]), cache)
    assert_close(mx.concatenate(actual), expected)


# ---------------------------------------------------------------------------------------------------
# LLaDA-2 MoE


@pytest.fixture(scope="module")
def llada(cpu_device):
    return load("llada2_moe")


def test_llada_fixture_has_prompts_inside_blocks(llada):
    _, _, data = llada
    assert all(int(p) % int(data["block_length"]) for p in data["prompts"])
    assert any(int(n) % int(data["block_length"]) for n in data["lengths"])   # a padded last block too


def test_llada_block_parallel_training_equals_sequential_inference(llada):
    config, network, data = llada
    length = int(data["block_length"])
    actual = []
    for row, (prompt, total) in enumerate(zip(data["prompts"], data["lengths"])):
        clean, noisy = data["clean"][row], data["noisy"][row]
        # As engine/generation/llada2.py: the prompt's whole blocks are prefilled; the block holding its
        # end is denoised with the prompt tail in place; each finished block is committed clean.
        cache = network.prefill(ids(clean[:prompt]), block_length=length)
        assert cache.offset == prompt // length * length
        for start in range(cache.offset, int(total), length):
            span = slice(start, min(start + length, int(total)))
            actual.append(network.denoise(ids(noisy[span]), cache)[0])
            network.commit(ids(clean[span]), cache)
    assert_close(mx.concatenate(actual), data["logits"])
    assert (data["noisy"] == config.mask_token_id).any()
