"""Growing a LLaDA-2 demo wider (scripts/demo/widen.py): the wider network computes what the narrow one did, its
new heads and units learn, and the bundled demo widened answers as before. (The trainer's --init-from with a wider
--size: tests/test_demo_deepen.py.)"""

from __future__ import annotations

import pytest
import torch

import engine

from scripts.demo.demo_config import demo_checkpoint_config
from scripts.demo.train import initialise
from scripts.demo.torch_llada2 import LLaDA2Moe
from scripts.demo.widen import widen


def configs() -> tuple[dict, dict]:
    narrow, _ = demo_checkpoint_config("llada2_moe", "tiny")
    wide, _ = demo_checkpoint_config("llada2_moe", "tiny-wide")
    return narrow, wide


def networks() -> tuple[LLaDA2Moe, LLaDA2Moe]:
    narrow_config, wide_config = configs()
    narrow = LLaDA2Moe(narrow_config)
    initialise(narrow, torch.Generator().manual_seed(3))
    with torch.no_grad():   # a trained model's residual stream is O(1), where RMSNorm's epsilon is negligible
        narrow.model.word_embeddings.weight.normal_(0.0, 1.0, generator=torch.Generator().manual_seed(5))
    wide = LLaDA2Moe(wide_config)
    initialise(wide, torch.Generator().manual_seed(4))
    arrays = widen({name: value.numpy() for name, value in narrow.state_dict().items()},
                   {name: value.numpy() for name, value in wide.state_dict().items()}, narrow_config, wide_config)
    wide.load_state_dict({name: torch.from_numpy(value) for name, value in arrays.items()})
    return narrow, wide


def test_the_wide_network_computes_what_the_narrow_one_did():
    narrow, wide = networks()
    assert (wide.sizes.hidden, wide.sizes.heads, wide.sizes.kv_heads) == (128, 8, 4)
    assert (narrow.sizes.hidden, narrow.sizes.heads, narrow.sizes.kv_heads) == (64, 4, 2)
    ids = torch.randint(4, narrow.sizes.vocab, (2, 40), generator=torch.Generator().manual_seed(0))
    positions = torch.arange(40).expand(2, -1)
    with torch.no_grad():
        before, after = narrow(ids, positions, None), wide(ids, positions, None)
    assert torch.allclose(before, after, atol=1e-4), (before - after).abs().max()


def test_the_new_heads_and_units_start_silent_and_learn():
    _, wide = networks()
    layer = wide.model.layers[1]
    old_hidden = 64
    # Nothing new writes into the residual stream yet ...
    assert layer.attention.dense.weight[old_hidden:].abs().sum() == 0
    assert layer.attention.dense.weight[:, old_hidden:].abs().sum() == 0   # the new heads' outputs
    assert layer.mlp.experts[0].down_proj.weight[:, old_hidden:].abs().sum() == 0
    # ... but what reads it holds fresh weights, so the gradient reaches the new parts.
    assert layer.attention.query_key_value.weight[:, old_hidden:].abs().sum() > 0
    ids = torch.randint(4, wide.sizes.vocab, (1, 16), generator=torch.Generator().manual_seed(1))
    logits = wide(ids, torch.arange(16)[None], None)
    torch.nn.functional.cross_entropy(logits[0], ids[0]).backward()
    assert layer.attention.dense.weight.grad[:, old_hidden:].abs().sum() > 0   # the new heads
    assert layer.attention.dense.weight.grad[old_hidden:].abs().sum() > 0      # the new residual dimensions


def test_widening_refuses_what_it_cannot_keep():
    narrow, wide = configs()
    empty = {}
    with pytest.raises(ValueError, match="head size"):
        widen(empty, empty, narrow, wide | {"head_dim": 32})
    with pytest.raises(ValueError, match="per key/value head"):
        widen(empty, empty, narrow, wide | {"num_key_value_heads": 2})
    with pytest.raises(ValueError, match="num_hidden_layers"):
        widen(empty, empty, narrow, wide | {"num_hidden_layers": 3})
    with pytest.raises(ValueError, match="cannot narrow"):
        widen(empty, empty, wide, narrow | {"num_attention_heads": 2, "num_key_value_heads": 1})


def test_the_bundled_demo_widened_answers_as_before(tmp_path):
    """The bundled LLaDA-2 demo grown to the "wide" size, not trained (learning rate 0), gives the engine the same
    answers: the function is kept at the real size, through the trainer's export, on the engine's forward."""
    from tests.test_demo_trainer import REPO, train

    demo = REPO / "tui" / "demo" / "llada2-demo"
    train(tmp_path / "wide", "llada2_moe", "--init-from", str(demo), "--size", "wide", "--steps", "1",
          "--lr", "0", "--min-lr", "0", "--weight-decay", "0", "--warmup", "0")
    narrow, wide = engine.load(str(demo)), engine.load(str(tmp_path / "wide" / "model"))
    assert (wide.config.hidden_size, wide.config.num_attention_heads) == (192, 6)
    for prompt in ("hi there!", "thanks a lot", "what is 12 + 30?"):
        messages = [{"role": "user", "content": prompt}]
        answers = [list(engine.generate(model, messages=messages))[-1].content for model in (narrow, wide)]
        assert answers[0] == answers[1], prompt
