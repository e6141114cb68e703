"""`engine.load` on the DiffusionGemma fixture checkpoints: bad folders give one clear CheckpointError,
the bf16 copy loads and runs on the CPU, and the load's peak memory is measured."""

from __future__ import annotations

import gc
import json
import shutil

import mlx.core as mx
import numpy as np
import pytest
from mlx.utils import tree_flatten

import engine
from conftest import CHECKPOINTS, GOLDEN
from engine.errors import CheckpointError


def copy_checkpoint(tmp_path, name: str = "dg_text"):
    target = tmp_path / name
    shutil.copytree(CHECKPOINTS / name, target)
    return target


def edit_config(folder, edit):
    config = json.loads((folder / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config))


def rewrite_weights(folder, edit):
    weights = dict(mx.load(str(folder / "model.safetensors")))
    edit(weights)
    mx.save_safetensors(str(folder / "model.safetensors"), weights)


def load_error(path) -> str:
    with pytest.raises(CheckpointError) as raised:
        engine.load(path)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_missing_folder(tmp_path):
    assert "not found" in load_error(tmp_path / "no-such-model")


def test_missing_config(tmp_path):
    folder = copy_checkpoint(tmp_path)
    (folder / "config.json").unlink()
    assert "config.json not found" in load_error(folder)


def test_unknown_model_type(tmp_path):
    folder = copy_checkpoint(tmp_path)
    edit_config(folder, lambda c: c.update(model_type="gemma3"))
    message = load_error(folder)
    assert "unsupported model_type 'gemma3'" in message and "diffusion_gemma" in message


def test_config_without_a_required_size(tmp_path):
    folder = copy_checkpoint(tmp_path)
    edit_config(folder, lambda c: c["text_config"].pop("num_experts"))
    assert "num_experts" in load_error(folder)


def test_missing_shard(tmp_path):
    folder = copy_checkpoint(tmp_path)
    names = list(mx.load(str(folder / "model.safetensors")))
    weight_map = {name: "model.safetensors" for name in names}
    weight_map[names[-1]] = "model-00002-of-00002.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    message = load_error(folder)
    assert "missing weight shard model-00002-of-00002.safetensors" in message


@pytest.mark.parametrize("keep_bytes", [0, 100, 1_500_000])
def test_truncated_weights(tmp_path, keep_bytes):
    # 0 bytes: an empty download; 100: inside the JSON header; 1.5 MB: inside the tensor data.
    folder = copy_checkpoint(tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:keep_bytes])
    message = load_error(folder)
    assert "model.safetensors" in message and "truncated or corrupt" in message


def test_tensor_of_the_wrong_shape(tmp_path):
    folder = copy_checkpoint(tmp_path)
    rewrite_weights(folder, lambda w: w.update({"model.decoder.norm.weight": mx.ones((63,))}))
    message = load_error(folder)
    assert "model.decoder.norm.weight" in message and "(63,)" in message and "(64,)" in message


def test_config_that_disagrees_with_the_weights(tmp_path):
    folder = copy_checkpoint(tmp_path)
    edit_config(folder, lambda c: c["text_config"].update(intermediate_size=96))
    message = load_error(folder)
    assert "shape" in message and "96" in message and "config.json" in message


def test_missing_and_unexpected_tensors(tmp_path):
    folder = copy_checkpoint(tmp_path)
    rewrite_weights(folder, lambda w: w.pop("model.decoder.layers.0.router.scale"))
    assert "lacks tensor model.decoder.layers.0.router.scale" in load_error(folder)
    rewrite_weights(folder, lambda w: w.update({
        "model.decoder.layers.0.router.scale": mx.ones((64,)), "model.decoder.layers.0.extra.weight": mx.ones((2,))}))
    assert "unexpected tensor model.decoder.layers.0.extra.weight" in load_error(folder)


def test_bf16_checkpoint_loads_and_runs_on_the_cpu_backend():
    bf16 = engine.load(CHECKPOINTS / "dg_text_mlx_bf16").network
    fp32 = engine.load(CHECKPOINTS / "dg_text_mlx_fp32").network
    assert set(v.dtype for _, v in tree_flatten(bf16.parameters())) == {mx.float32}  # upcast for the CPU
    # The bf16 copy is the fp32 weights cast to bf16: its upcast weights are exactly those values.
    fp32_params = dict(tree_flatten(fp32.parameters()))
    for name, value in tree_flatten(bf16.parameters()):
        assert mx.array_equal(value, fp32_params[name].astype(mx.bfloat16).astype(mx.float32)), name

    golden = np.load(GOLDEN / "dg_text_mlx_fp32" / "forward.npz")
    logits = {}
    for label, network in (("bf16", bf16), ("fp32", fp32)):
        cache = network.prefill(mx.array(golden["input_ids"])[None])
        logits[label] = np.array(network.denoise(mx.array(golden["canvas_ids"])[None], cache)[0])
    assert np.isfinite(logits["bf16"]).all()
    # bf16 weight rounding (~2^-9 relative) can flip an expert choice at a few positions, so the check is loose:
    # close on average, the same argmax almost everywhere.
    difference = np.abs(logits["bf16"] - logits["fp32"])
    assert difference.mean() < 0.25 and np.median(difference) < 0.1
    assert (logits["bf16"].argmax(-1) == logits["fp32"].argmax(-1)).mean() >= 0.9


@pytest.mark.parametrize("name", ["dg_text", "dg_text_mlx_4bit", "dg_text_mlx_bf16"])
def test_load_peak_memory(name, capsys):
    gc.collect()
    before = mx.get_active_memory()
    mx.reset_peak_memory()
    network = engine.load(CHECKPOINTS / name).network
    peak = mx.get_peak_memory() - before
    parameter_bytes = sum(v.nbytes for _, v in tree_flatten(network.parameters()))
    with capsys.disabled():
        print(f"\n{name}: load peak {peak / 2**20:.2f} MiB for {parameter_bytes / 2**20:.2f} MiB of parameters")
    # The load keeps the weights once; transient copies (bf16 -> float32 upcast) stay within a few times that.
    assert parameter_bytes <= peak <= 3 * parameter_bytes
