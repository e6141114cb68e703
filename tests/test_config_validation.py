"""Absurd or hostile config.json values are refused with one line naming the field (engine/models/config_checks.py),
never an `unexpected OverflowError` or a confusing tensor error later."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import CHECKPOINTS
from tui.cli import main


def broken_copy(tmp_path, name: str, change: dict, text: bool = False):
    folder = tmp_path / name
    shutil.copytree(CHECKPOINTS / name, folder)
    config = json.loads((folder / "config.json").read_text())
    (config["text_config"] if text else config).update(change)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def refusal(folder, capsys) -> str:
    code = main(["generate", "--model", str(folder), "--prompt", "hi", "--max-tokens", "4"])
    error = capsys.readouterr().err.strip()
    assert code == 1 and len(error.splitlines()) == 1 and "unexpected" not in error, error
    return error


@pytest.mark.parametrize("change, named", [
    ({"vocab_size": 10**12}, "text_config.vocab_size is 1000000000000; expected an integer from 1 to 16,777,216"),
    ({"hidden_size": 0}, "text_config.hidden_size is 0"),
    ({"num_hidden_layers": -1}, "text_config.num_hidden_layers is -1"),
    ({"num_hidden_layers": 4.5}, "text_config.num_hidden_layers is 4.5"),
    ({"head_dim": "16"}, "text_config.head_dim is '16'"),
    ({"head_dim": 15}, "text_config.head_dim is 15; RoPE needs an even number"),
    ({"num_key_value_heads": 3}, "text_config.num_key_value_heads (3) must divide num_attention_heads (4)"),
    ({"top_k_experts": 9}, "text_config.top_k_experts (9) is more than num_experts (8)"),
    ({"sliding_window": -5}, "text_config.sliding_window is -5"),
    ({"max_position_embeddings": 10**9}, "text_config.max_position_embeddings is 1000000000"),
    ({"rms_norm_eps": -1}, "text_config.rms_norm_eps is -1"),
    ({"pad_token_id": 512}, "text_config.pad_token_id is 512; expected an integer from 0 to 511"),
    ({"rope_parameters": {"full_attention": {"rope_type": "proportional", "rope_theta": float("inf")}}},
     "text_config.rope_parameters.full_attention.rope_theta is inf"),
])
def test_diffusion_gemma_text_config_values_are_checked(tmp_path, capsys, change, named):
    assert named in refusal(broken_copy(tmp_path, "dg_text", change, text=True), capsys)


@pytest.mark.parametrize("change, named", [
    ({"canvas_length": 0}, "canvas_length is 0"),
    ({"image_token_id": 10**6}, "image_token_id is 1000000; expected an integer from 0 to 511"),
    ({"eos_token_id": [1, -3]}, "eos_token_id is -3"),
])
def test_diffusion_gemma_top_level_values_are_checked(tmp_path, capsys, change, named):
    assert named in refusal(broken_copy(tmp_path, "dg_text", change), capsys)


@pytest.mark.parametrize("change, named", [
    ({"vocab_size": 10**12}, "vocab_size is 1000000000000; expected an integer from 1 to 16,777,216"),
    ({"num_hidden_layers": -1}, "num_hidden_layers is -1; expected an integer from 1 to 1,024"),
    ({"num_attention_heads": 0}, "num_attention_heads is 0"),
    ({"num_key_value_heads": 3}, "num_key_value_heads (3) must divide num_attention_heads (4)"),
    ({"head_dim": 0}, "head_dim is 0"),
    ({"rotary_dim": 17}, "rotary_dim (17) is more than head_dim (16)"),
    ({"rotary_dim": 7}, "rotary_dim is 7; RoPE needs an even number"),
    ({"num_experts_per_tok": 9}, "num_experts_per_tok (9) is more than the 4 experts"),
    ({"topk_group": 5}, "topk_group (5) is more than n_group (4)"),
    ({"first_k_dense_replace": 4}, "first_k_dense_replace (4) is more than num_hidden_layers (3)"),
    ({"mask_token_id": 600}, "mask_token_id is 600; expected an integer from 0 to 511"),
    ({"use_qk_norm": "yes"}, "use_qk_norm is 'yes'; expected true or false"),
    ({"max_position_embeddings": 0}, "max_position_embeddings is 0"),
    ({"rope_theta": -1}, "rope_theta is -1"),
])
def test_llada2_config_values_are_checked(tmp_path, capsys, change, named):
    assert named in refusal(broken_copy(tmp_path, "llada2", change), capsys)
