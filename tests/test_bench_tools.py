"""The pure parts of the benchmarks: the step FLOP counter and the real-size checkpoint builder (bench/gpu.sh)."""

from __future__ import annotations

import json

import engine
from bench.real_size import REAL_TEXT, real_size_config, write_random_quantized
from bench.step_flops import mean_step_flops, step_flops

TINY = dict(hidden_size=4, vocab_size=10, intermediate_size=6, num_attention_heads=2, top_k_experts=2,
            moe_intermediate_size=3, num_experts=5, head_dim=2, global_head_dim=3, num_key_value_heads=1,
            num_global_key_value_heads=1, sliding_window=4, layer_types=["sliding_attention", "full_attention"])


def test_step_flops_counts_every_matmul_of_a_step_by_hand():
    parts = step_flops(TINY, canvas=3, prefix=5)
    mm = 2 * 3
    assert parts["lm_head"] == parts["soft_embedding"] == mm * 4 * 10
    assert parts["self_conditioning_mlp"] == mm * 3 * 4 * 6
    # sliding: q 2*2, k 1*2, v 1*2, o 2*2 columns; full (k = v): q 2*3, k 1*3, o 2*3
    assert parts["attention_projections"] == mm * 4 * (4 + 2 + 2 + 4) + mm * 4 * (6 + 3 + 6)
    # sliding keys: the canvas + window - 1 = 3 prefix positions; full keys: canvas + the whole prefix
    assert parts["attention_products"] == 4 * 2 * 3 * (3 + 3) * 2 + 4 * 2 * 3 * (3 + 5) * 3
    assert parts["dense_mlp"] == 2 * mm * 3 * 4 * 6
    assert parts["router"] == 2 * mm * 4 * 5
    assert parts["experts_active"] == 2 * mm * 2 * 3 * 4 * 3
    assert parts["total"] == sum(v for k, v in parts.items() if k != "total")


def test_first_step_has_no_self_conditioning_and_later_blocks_see_longer_prefixes():
    assert step_flops(TINY, 3, 5, self_conditioning=False)["soft_embedding"] == 0
    one, two = step_flops(TINY, 3, 5)["total"], step_flops(TINY, 3, 8)["total"]
    assert mean_step_flops(TINY, canvas=3, prompt=5, blocks=2) == round((one + two) / 2)


def test_the_mid_checkpoint_step_is_about_36_gflop():
    from bench.random_checkpoint import MID_SIZE

    text = dict(MID_SIZE, layer_types=["full_attention" if (i + 1) % 4 == 0 or i == 7 else "sliding_attention"
                                       for i in range(8)])
    assert 33e9 < step_flops(text, 256, 120)["total"] < 38e9


def test_real_size_config_has_the_published_shape():
    config = real_size_config()
    text = config["text_config"]
    assert text["hidden_size"] == 2816 and text["vocab_size"] == 262144 and text["num_experts"] == 128
    assert text["layer_types"].count("full_attention") == 5 and text["layer_types"][5] == "full_attention"
    assert config["canvas_length"] == 256 and config["vision_config"] is None
    assert real_size_config(num_hidden_layers=6)["text_config"]["num_hidden_layers"] == 6
    assert REAL_TEXT["top_k_experts"] == 8


def test_a_tiny_real_layout_checkpoint_loads_and_denoises(tmp_path):
    config = real_size_config(canvas_length=16, hidden_size=128, num_hidden_layers=6, intermediate_size=128,
                              moe_intermediate_size=64, num_experts=4, top_k_experts=2, num_attention_heads=2,
                              num_key_value_heads=1, num_global_key_value_heads=1, head_dim=64, global_head_dim=128,
                              vocab_size=1024)
    report = write_random_quantized(tmp_path, config, shard_bytes=1 << 20)
    assert report["shards"] > 1
    written = json.loads((tmp_path / "config.json").read_text())
    quantization = written["quantization"]
    assert (quantization["bits"], quantization["group_size"]) == (4, 64)
    eight = {k for k, v in quantization.items() if isinstance(v, dict)}
    assert "model.decoder.embed_tokens" in eight and "model.decoder.layers.0.router.proj" in eight
    assert "model.decoder.layers.0.experts.gate_up_proj" not in eight  # experts stay 4-bit
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert "model.decoder.layers.0.experts.gate_up_proj.scales" in index["weight_map"]
    assert "model.decoder.layers.5.self_attn.v_proj.weight" not in index["weight_map"]  # full layers: k = v
    model = engine.load(str(tmp_path))
    finished = list(engine.generate(model, prompt_ids=[5, 6, 7],
                                    settings=engine.Settings(max_tokens=16, max_denoising_steps=2)))[-1]
    assert finished.stats.steps_per_block[0] == 2


def test_time_demos_refuses_a_folder_that_is_no_checkpoint(tmp_path, capsys):
    import pytest

    from bench.time_demos import main

    with pytest.raises(SystemExit) as stopped:
        main([str(tmp_path)])
    assert stopped.value.code == 2 and "no config.json there" in capsys.readouterr().err
