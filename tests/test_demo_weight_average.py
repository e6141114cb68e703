"""The trainer's weight average (`--ema`, scripts/demo/weight_average.py): the arithmetic of the average, the
network holding its own weights again after an export, and a run that stops and resumes exporting the average
it carried across the stop rather than the last step's weights."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from scripts.demo.weight_average import WeightAverage
from tests.test_demo_trainer import train


def network() -> torch.nn.Linear:
    layer = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        layer.weight.fill_(0.0)
    return layer


def test_the_average_moves_toward_the_weights_with_a_short_start_then_the_decay():
    layer = network()
    average = WeightAverage(layer, decay=0.9)
    expected = 0.0
    for step in range(100):
        with torch.no_grad():
            layer.weight.fill_(float(step + 1))
        decay = min(0.9, (1 + step) / (10 + step))
        expected = decay * expected + (1 - decay) * (step + 1)
        average.update()
    assert average.average[0].item() == pytest.approx(expected, rel=1e-6)
    assert average.current_decay() == 0.9
    assert 85 < expected < 100   # behind the weights (100), but not stuck at the start (0)


def averaged_once(value: float) -> tuple[torch.nn.Linear, WeightAverage]:
    """A layer at 0, its average (decay 0.5), then the layer set to `value` and the average updated once."""
    layer = network()
    average = WeightAverage(layer, decay=0.5)
    with torch.no_grad():
        layer.weight.fill_(value)
    average.update()
    return layer, average


def test_applied_holds_the_average_inside_and_the_own_weights_after():
    layer, average = averaged_once(4.0)
    inside = None
    with average.applied():
        inside = layer.weight.item()
    assert inside == pytest.approx(average.average[0].item()) and inside != 4.0
    assert layer.weight.item() == 4.0


def test_a_saved_average_loads_back_and_refuses_another_network():
    layer, average = averaged_once(2.0)
    again = WeightAverage(network(), decay=0.5)
    again.load_state_dict(average.state_dict())
    assert again.updates == 1 and again.average[0].item() == average.average[0].item()
    with pytest.raises(ValueError):
        WeightAverage(torch.nn.Sequential(network(), network()), 0.5).load_state_dict(average.state_dict())
    with pytest.raises(ValueError):
        WeightAverage(layer, decay=1.0)


def test_a_stopped_and_resumed_run_exports_the_average_it_carried(tmp_path):
    out = tmp_path / "run"
    train(out, "llada2_moe", "--ema", "0.9", "--stop-at", "10", "--workers", "0")
    assert "resumed at step 10" in train(out, "llada2_moe", "--ema", "0.9", "--workers", "0")
    state = torch.load(out / "state.pt", weights_only=False)
    assert state["average"]["updates"] == 20     # ten before the stop, ten after it
    exported = load_file(str(out / "model" / "model.safetensors"))
    averaged = state["average"]["average"]
    trained = [name for name in averaged if averaged[name].ndim >= 2]
    assert trained and set(averaged) <= set(exported)
    for name in averaged:
        assert torch.equal(exported[name], averaged[name].float())
    assert any(not torch.equal(exported[name], state["model"][name]) for name in trained)
