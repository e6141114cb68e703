"""Expert dispatch on the pure-MLX path (issue 25 item 3): with SORT_FROM_PAIRS token-expert pairs or more the
experts' gather-matmuls run on pairs sorted by expert (sorted_indices=True) and put back in token order; the
result must equal the unsorted dispatch on both families' fixtures, float and 4-bit (quantized experts stay
quantized: gather_qmm)."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from engine.cpu import switch
from engine.models import layers
from engine.models.layers import QuantizedSwitchLinear

FIXTURES = ["dg_text", "dg_text_mlx_4bit", "llada2", "llada2_mlx_4bit"]


def _moe_block(network):
    """The first routed-expert block of the network and a function running it on hidden states [N, H]."""
    for module in network.modules():
        if hasattr(module, "experts") and hasattr(module, "router"):      # DiffusionGemma decoder layer
            def run(x, m=module):
                indices, weights = m.router(x)
                return m.experts(x, indices, weights)
            return module.experts.gate_up_proj, run
        if hasattr(module, "switch_mlp"):                                  # LLaDA-2 sparse MoE block
            return module.switch_mlp.gate_up_proj, module
    raise AssertionError("no expert block in this network")


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("tokens", [64, 5])
def test_sorted_dispatch_equals_unsorted(name, tokens, load_network, monkeypatch):
    monkeypatch.setenv(switch.ENV, "0")  # the MLX path: the host path would run its own expert block
    _, network = load_network(name)
    projection, block = _moe_block(network)
    if name.endswith("4bit"):
        assert isinstance(projection, QuantizedSwitchLinear), "a 4-bit checkpoint's experts must stay quantized"
    hidden = projection.weight.shape[-1] * (32 // projection.bits if name.endswith("4bit") else 1)
    x = mx.random.normal((tokens, hidden), key=mx.random.key(7))
    seen = []
    original = layers.gather_sort

    def spy(*args):
        seen.append(True)
        return original(*args)

    monkeypatch.setattr(layers, "gather_sort", spy)
    ours = np.array(block(x))
    sorted_here = bool(seen)
    monkeypatch.setattr(layers, "SORT_FROM_PAIRS", 10**9)
    seen.clear()
    unsorted = np.array(block(x))
    assert not seen
    # 64 tokens are >= 64 pairs at any top-k; 5 tokens at the fixtures' top-k are fewer
    assert sorted_here == (tokens == 64)
    np.testing.assert_allclose(ours, unsorted, rtol=1e-5, atol=1e-5)
