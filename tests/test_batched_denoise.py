"""Several requests' decoder passes in one batched forward (engine.models.diffusion_gemma.batched,
engine.generation.forward) against one pass per request: requests with prefix caches of different lengths,
canvases of different lengths, with and without a self-conditioning signal."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import engine
from conftest import CHECKPOINTS
from engine.generation.forward import DenoiseCall, forward_all
from tui.demo_models import DEMO_ROOT


def _calls(network, seed: int) -> list[DenoiseCall]:
    rng = np.random.default_rng(seed)
    vocab = network.vocab_size
    calls = []
    for prompt, canvas, conditioned in ((7, 16, False), (23, 9, True), (12, 16, True), (40, 5, False)):
        cache = network.prefill(mx.array(rng.integers(0, vocab, (1, prompt)), dtype=mx.int32))
        signal = None
        if conditioned:
            probabilities = rng.dirichlet(np.ones(vocab) * 0.1, canvas).astype(np.float32)
            signal = network.self_conditioning_from_probabilities(probabilities)
        ids = mx.array(rng.integers(0, vocab, (1, canvas)), dtype=mx.int32)
        calls.append(DenoiseCall(ids, cache, {"self_conditioning": signal, "softcap": False}))
    return calls


@pytest.mark.parametrize("folder", [CHECKPOINTS / "dg_text", DEMO_ROOT / "diffusion-gemma-demo"],
                         ids=["random", "demo"])
def test_one_batched_forward_gives_each_request_its_solo_logits(folder):
    network = engine.load(str(folder)).network
    calls = _calls(network, seed=3)
    offsets = [call.cache.offset for call in calls]
    batched = forward_all(network, calls)
    solo = [call.run(network) for call in calls]
    assert [call.cache.offset for call in calls] == offsets, "a denoising pass must not write the caches"
    for together, alone, call in zip(batched, solo, calls):
        assert together.shape == alone.shape == (1, call.canvas.shape[1], network.vocab_size)
        together, alone = np.array(together), np.array(alone)
        scale = float(np.abs(alone).max())
        assert np.abs(together - alone).max() <= 1e-4 * scale
        np.testing.assert_array_equal(together.argmax(-1), alone.argmax(-1))


def test_a_batched_pass_differs_per_request():
    """Each request reads its own cache and canvas: swapping two calls' canvases swaps their logits."""
    network = engine.load(str(CHECKPOINTS / "dg_text")).network
    first, second, *_ = _calls(network, seed=5)
    batched = forward_all(network, [first, second])
    assert not np.allclose(np.array(batched[0])[0, :5], np.array(batched[1])[0, :5])


@pytest.mark.parametrize("folder", [CHECKPOINTS / "llada2", DEMO_ROOT / "llada2-demo"], ids=["random", "demo"])
def test_llada2_blocks_of_several_requests_in_one_forward_equal_their_solo_logits(folder):
    network = engine.load(str(folder)).network
    rng = np.random.default_rng(4)
    vocab = network.vocab_size
    calls = []
    for prompt, block in ((64, 32), (32, 32), (0, 16), (96, 32)):
        cache = network.make_cache(32)
        if prompt:
            network.prefill(mx.array(rng.integers(0, vocab, (1, prompt)), dtype=mx.int32), cache, 32)
        calls.append(DenoiseCall(mx.array(rng.integers(0, vocab, (1, block)), dtype=mx.int32), cache))
    batched = forward_all(network, calls)
    for together, call in zip(batched, calls):
        alone = np.array(call.run(network))
        together = np.array(together)
        assert together.shape == alone.shape == (1, call.canvas.shape[1], vocab)
        assert np.abs(together - alone).max() <= 1e-4 * float(np.abs(alone).max())
        np.testing.assert_array_equal(together.argmax(-1), alone.argmax(-1))
