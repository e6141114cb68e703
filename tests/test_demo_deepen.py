"""Growing a LLaDA-2 demo deeper (scripts/demo/deepen.py): the grown network computes what the smaller one did,
its new layers learn, and the trainer grows a checkpoint given to --init-from with a deeper (or, widen.py, wider)
--size."""

from __future__ import annotations

import json
import subprocess

import pytest
import torch

import engine

from scripts.demo.deepen import deepen, layer_count, placement
from scripts.demo.demo_config import demo_checkpoint_config
from scripts.demo.train import initialise
from scripts.demo.torch_llada2 import LLaDA2Moe


def networks(old: int, new: int) -> tuple[LLaDA2Moe, LLaDA2Moe]:
    config, _ = demo_checkpoint_config("llada2_moe", "tiny")
    small = LLaDA2Moe(config | {"num_hidden_layers": old})
    initialise(small, torch.Generator().manual_seed(3))
    grown = LLaDA2Moe(config | {"num_hidden_layers": new})
    arrays = deepen({name: value.numpy() for name, value in small.state_dict().items()}, grown.state_dict())
    grown.load_state_dict({name: torch.from_numpy(value) for name, value in arrays.items()})
    return small, grown


def test_placement_keeps_the_first_and_last_layers_and_the_order():
    assert placement(6, 8) == [0, 1, 3, 4, 6, 7]
    assert placement(2, 2) == [0, 1]
    assert placement(1, 3) == [0]
    with pytest.raises(ValueError):
        placement(4, 3)


def test_the_grown_network_computes_what_the_small_one_did():
    small, grown = networks(3, 5)
    ids = torch.randint(3, small.sizes.vocab, (2, 40), generator=torch.Generator().manual_seed(0))
    positions = torch.arange(40).expand(2, -1)
    with torch.no_grad():
        before, after = small(ids, positions, None), grown(ids, positions, None)
    assert layer_count(grown.state_dict()) == 5
    assert torch.allclose(before, after, atol=1e-5)
    # The grown network is not the small one renamed: its new layers hold weights (only their writers are 0).
    assert grown.model.layers[3].attention.query_key_value.weight.abs().sum() > 0


def test_the_new_layers_start_silent_and_learn():
    _, grown = networks(3, 5)
    new = grown.model.layers[1]   # placement(3, 5) == [0, 2, 4]
    assert new.attention.dense.weight.abs().sum() == 0
    ids = torch.randint(3, grown.sizes.vocab, (1, 16), generator=torch.Generator().manual_seed(1))
    logits = grown(ids, torch.arange(16)[None], None)
    torch.nn.functional.cross_entropy(logits[0], ids[0]).backward()
    assert new.attention.dense.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("size, grown, shape", [
    ("tiny-deep", "grown from 2 to 3 layers", (3, 64)),
    ("tiny-wide", "grown from hidden size 64 to 128", (2, 128)),   # scripts/demo/widen.py
])
def test_the_trainer_grows_an_init_checkpoint_for_a_deeper_or_wider_size(tmp_path, size, grown, shape):
    from tests.test_demo_trainer import train

    small = tmp_path / "small"
    train(small, "llada2_moe", "--steps", "10")
    out = train(tmp_path / "grown", "llada2_moe", "--init-from", str(small / "model"), "--size", size, "--steps", "5")
    assert grown in out
    model = engine.load(str(tmp_path / "grown" / "model"))   # the engine reads the grown export
    assert (model.config.num_hidden_layers, model.config.hidden_size) == shape


@pytest.mark.parametrize("family, demo", [("diffusion_gemma", "tui/demo/diffusion-gemma-demo"),
                                          ("llada2_moe", "tui/demo/llada2-demo")])
def test_a_checkpoint_that_cannot_be_grown_is_refused_in_one_line(tmp_path, family, demo):
    """DiffusionGemma is never grown, and no checkpoint is cut down to fewer layers."""
    from tests.test_demo_trainer import REPO, train_python

    command = [train_python(), "-m", "scripts.demo.train", "--family", family, "--out", str(tmp_path),
               "--size", "tiny", "--init-from", demo, "--steps", "1", "--threads", "1"]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    config = json.loads((REPO / demo / "config.json").read_text())
    layers = config.get("text_config", config)["num_hidden_layers"]
    assert f"{layers} layers, but --size tiny has 2" in result.stderr and "Traceback" not in result.stderr
