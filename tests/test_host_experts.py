"""The routed experts computed on the host (engine.cpu.experts) give what MLX's path gives (to float
rounding: other BLAS calls) for both families, the same bits on one thread or several, and stand aside where
they cannot run (quantized weights, MLX tracing)."""

from __future__ import annotations

import json
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest

from engine.cpu import experts as host_experts
from engine.cpu import kernels, pool, switch
from engine.models import ops
from engine.models.diffusion_gemma.config import TextConfig
from engine.models.diffusion_gemma.modules import Experts
from engine.models.llada2_config import ModelConfig as LLaDAConfig
from engine.models.llada2_moe import SparseMoeBlock

FIXTURES = Path(__file__).parent / "fixtures" / "checkpoints"

pytestmark = pytest.mark.cpu_host


def _dg_experts(num_experts: int = 8) -> Experts:
    text = json.loads((FIXTURES / "dg_text" / "config.json").read_text())["text_config"]
    experts = Experts(TextConfig.from_dict({**text, "num_experts": num_experts}))
    mx.eval(experts.parameters())
    return experts


def _routing(tokens: int, num_experts: int, top_k: int, hidden: int, seed: int):
    rng = np.random.default_rng(seed)
    x = mx.array(rng.standard_normal((tokens, hidden)).astype(np.float32))
    indices = mx.array(np.argsort(rng.random((tokens, num_experts)), axis=1)[:, :top_k].astype(np.int32))
    weights = mx.softmax(mx.array(rng.standard_normal((tokens, top_k)).astype(np.float32)), axis=-1)
    return x, indices, weights


def _mlx_path(monkeypatch, work):
    with switch.disabled():
        return work()


@pytest.mark.parametrize("tokens", [3, 40, 300])   # MLX's gather_mm, its grouped path, and parallel sizes
def test_diffusion_gemma_host_experts_match_the_mlx_path(monkeypatch, tokens):
    experts = _dg_experts()
    x, indices, weights = _routing(tokens, 8, 2, experts.down_proj.weight.shape[1], seed=tokens)
    host = experts(x, indices, weights)
    reference = _mlx_path(monkeypatch, lambda: experts(x, indices, weights))
    assert host.shape == reference.shape == x.shape
    np.testing.assert_allclose(np.array(host), np.array(reference), rtol=1e-5, atol=1e-6)


def test_llada2_host_experts_match_the_mlx_path(monkeypatch):
    config = json.loads((FIXTURES / "llada2" / "config.json").read_text())
    block = SparseMoeBlock(LLaDAConfig.from_dict(config))
    mx.eval(block.parameters())
    rng = np.random.default_rng(1)
    x = mx.array(rng.standard_normal((1, 96, config["hidden_size"])).astype(np.float32))
    host = block(x)
    reference = _mlx_path(monkeypatch, lambda: block(x))
    assert host.shape == reference.shape == x.shape
    np.testing.assert_allclose(np.array(host), np.array(reference), rtol=1e-5, atol=1e-6)


def test_many_threads_give_the_bits_one_thread_gives(monkeypatch):
    experts = _dg_experts()
    x, indices, weights = _routing(400, 8, 2, experts.down_proj.weight.shape[1], seed=7)
    results = []
    for workers in (1, 3):
        monkeypatch.setattr(host_experts.pool, "workers", lambda: workers)
        results.append(experts(x, indices, weights))
    assert mx.array_equal(results[0], results[1])


def test_quantized_experts_and_the_switch_take_the_mlx_path():
    experts = _dg_experts()
    x, indices, weights = _routing(64, 8, 2, experts.down_proj.weight.shape[1], seed=3)
    calls = []

    def mlx():
        calls.append("mlx")
        return experts._gather(x, indices, weights)

    def seam():
        return ops.routed_experts(x, indices, weights, experts.gate_up_proj, experts.down_proj, "geglu", mlx)

    seam()
    assert calls == []                          # float weights, host path on: the host block
    with switch.disabled():
        seam()
    assert calls == ["mlx"]                     # switched off (a gradient, a test of the MLX path)
    nn.quantize(experts, group_size=32, bits=8)
    assert not host_experts.float_weights(experts.gate_up_proj, experts.down_proj)
    seam()
    assert calls == ["mlx", "mlx"]              # quantized: MLX's gather_qmm reads the packed codes
    assert experts(x, indices, weights).shape == x.shape   # and the layer still runs, through gather_qmm


def test_experts_are_split_into_parts_of_about_equal_rows():
    counts = np.array([30, 0, 5, 12, 12, 7, 0, 20])
    parts = host_experts._balanced(counts, 2)
    assert sorted(e for part in parts for e in part) == [0, 2, 3, 4, 5, 7]   # each expert with rows, once
    loads = [int(counts[part].sum()) for part in parts]
    assert max(loads) - min(loads) <= 5
    assert host_experts._balanced(np.array([0, 4, 0]), 3) == [[1]]           # no empty parts


def test_bfloat16_expert_weights_run_on_the_host_too(monkeypatch):
    experts = _dg_experts()
    x, indices, weights = _routing(64, 8, 2, experts.down_proj.weight.shape[1], seed=9)
    reference = experts(x, indices, weights)
    experts.gate_up_proj.weight = experts.gate_up_proj.weight.astype(mx.bfloat16)
    experts.down_proj.weight = experts.down_proj.weight.astype(mx.bfloat16)
    assert host_experts.float_weights(experts.gate_up_proj, experts.down_proj)
    host = host_experts.routed_experts(x, indices, weights, experts.gate_up_proj, experts.down_proj, kernels.geglu)
    assert host.dtype == mx.float32
    np.testing.assert_allclose(np.array(host), np.array(reference), rtol=0.05, atol=0.02)   # bf16 weights


def test_the_host_pool_runs_one_part_on_the_calling_thread_and_many_in_order():
    import threading

    caller = threading.get_ident()
    assert pool.run_parts(lambda part: (part, threading.get_ident() == caller), [7]) == [(7, True)]
    assert pool.run_parts(lambda part: part * 2, range(5)) == [0, 2, 4, 6, 8]
    assert pool.run_parts(lambda part: part, []) == []
