"""The pure-MLX path (Metal, CUDA; here MLX's CPU backend with the host path off) waits for the device at most
once per denoising step: the one read of the step's per-position results the sampler's decisions and the UI's
frame need (issue 25). Counted with bench/host_syncs.py (mx.eval, .item(), .tolist(), NumPy conversions of MLX
arrays) between consecutive Step events of one block, so prefill and commits are not counted."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import engine
from bench.host_syncs import counting
from engine.cpu import switch
from engine.events import Step

from conftest import CHECKPOINTS

CASES = [
    ("dg_text", {"temp": 1.0}), ("dg_text", {"temp": 0.0}), ("dg_text_mlx_4bit", {"temp": 1.0}),
    ("llada2", {"temp": 0.0}), ("llada2", {"temp": 1.0, "top_k": 20}), ("llada2_mlx_4bit", {"temp": 0.0}),
]


def _syncs_per_step(name: str, extra: dict) -> list[int]:
    model = engine.load(CHECKPOINTS / name)
    settings = engine.Settings(max_tokens=48, max_denoising_steps=6, seed=3, **extra)
    marks = []
    with counting() as counter:
        for event in engine.generate(model, prompt_ids=list(range(5, 20)), settings=settings):
            if isinstance(event, Step):
                marks.append((event.block, counter.count))
    return [n - marks[i - 1][1] for i, (block, n) in enumerate(marks) if i and marks[i - 1][0] == block]


@pytest.mark.parametrize("name,extra", CASES)
def test_mlx_path_syncs_at_most_once_per_step(name, extra, monkeypatch):
    monkeypatch.setenv(switch.ENV, "0")
    per_step = _syncs_per_step(name, extra)
    assert len(per_step) >= 3, "the run must have several steps within a block to count"
    assert max(per_step) <= 1, per_step


def test_counter_sees_the_kinds_of_sync():
    """The counter must see each kind it claims to count, or the bound above proves nothing."""

    with counting() as counter:
        a = mx.arange(4) + 1
        mx.eval(a)
        np.array(a)
        np.asarray(a)
        a.tolist()
        a.sum().item()
    assert counter.kinds == {"mx.eval": 1, "np.array": 1, "np.asarray": 1, "mx.array.tolist": 1, "mx.array.item": 1}


def test_host_path_counts_more_than_mlx_path(monkeypatch):
    """The host path reads the logits onto the host (several conversions a step): the counter tells the two
    paths apart, so the MLX path's bound is not vacuous."""
    if mx.default_device().type != mx.DeviceType.cpu:
        pytest.skip("the host path runs on the CPU backend only")
    monkeypatch.setenv(switch.ENV, "1")
    assert max(_syncs_per_step("dg_text", {"temp": 1.0})) > 1
