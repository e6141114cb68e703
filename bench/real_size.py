"""Write a random DiffusionGemma 26B-A4B checkpoint in the mlx-community 4-bit layout (for bench/gpu.sh).

The architecture numbers are those of the published diffusiongemma-26B-A4B (text part: the step benchmark
has no images): hidden 2816, 30 layers (every sixth full attention), 128 experts top-8, vocab 262,144,
canvas 256. The layout is what scripts/demo/quantize.py writes and mlx-community publishes: the engine's own
parameter tree, quantized 4-bit (group 64, affine) with the embedding, attention, dense MLP and router at 8
bits, `.scales` / `.biases` beside each quantized weight, sharded safetensors with an index.

Random weights are drawn directly in quantized form (packed uint32 codes, small bfloat16 scales, biases that
centre the codes), so the ~100 GB float model is never materialised: the network is built lazily only to
read each tensor's name, shape and dtype after quantization.

Usage: python bench/real_size.py FOLDER [--layers N] [--shard-gib 4]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "checkpoints" / "dg_text"

# diffusiongemma-26B-A4B's text architecture (published config.json), written out here as numbers.
REAL_TEXT = dict(
    model_type="diffusion_gemma_text", hidden_size=2816, num_hidden_layers=30, intermediate_size=2112,
    moe_intermediate_size=704, num_experts=128, top_k_experts=8, num_attention_heads=16, num_key_value_heads=8,
    num_global_key_value_heads=2, head_dim=256, global_head_dim=512, vocab_size=262144, sliding_window=1024,
    max_position_embeddings=262144, final_logit_softcapping=30.0, rms_norm_eps=1e-6,
    hidden_activation="gelu_pytorch_tanh", attention_bias=False, attention_dropout=0.0, tie_word_embeddings=True,
    bos_token_id=2, eos_token_id=1, pad_token_id=0, dtype="bfloat16", use_bidirectional_attention="vision",
    rope_parameters={"full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0,
                                        "rope_type": "proportional"},
                     "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
)
FULL_EVERY = 6
GROUP_SIZE, BITS = 64, 4
# Modules mlx-community keeps at 8 bits (embedding, attention projections, dense MLP, router).
EIGHT_BIT = re.compile(r"(^model\.decoder\.embed_tokens$|\.self_attn\.[qkvo]_proj$|\.mlp\.(gate|up|down)_proj$|"
                       r"\.router\.proj$)")
GENERATION = {"max_new_tokens": 256, "max_denoising_steps": 48, "t_min": 0.4, "t_max": 0.8,
              "stability_threshold": 1, "confidence_threshold": 0.005, "eos_token_id": [1, 106, 50],
              "sampler_config": {"_cls_name": "EntropyBoundSamplerConfig", "entropy_bound": 0.1}}


def real_size_config(canvas_length: int = 256, **text_overrides) -> dict:
    """config.json of the real-size text model (overrides shrink it for tests), with the quantization block
    filled in by `write_random_quantized` (per-module 8-bit entries need the module paths)."""
    text = {**REAL_TEXT, **text_overrides}
    layers = text["num_hidden_layers"]
    text["layer_types"] = ["full_attention" if (i + 1) % FULL_EVERY == 0 else "sliding_attention"
                           for i in range(layers)]
    vocab = text["vocab_size"]
    return {"architectures": ["DiffusionGemmaForBlockDiffusion"], "model_type": "diffusion_gemma",
            "canvas_length": canvas_length, "dtype": "bfloat16", "tie_word_embeddings": True,
            "eos_token_id": [1, 106, 50], "boi_token_id": vocab - 7, "image_token_id": vocab - 5,
            "eoi_token_id": vocab - 3, "vision_config": None, "text_config": text,
            "generation_config": dict(GENERATION)}


def quantization_block(paths: list[str]) -> dict:
    block = {"group_size": GROUP_SIZE, "bits": BITS, "mode": "affine"}
    block.update({p: {"group_size": GROUP_SIZE, "bits": 8} for p in paths if EIGHT_BIT.search(p)})
    return block


def write_random_quantized(folder: Path, config: dict, seed: int = 0, shard_bytes: int = 4 << 30) -> dict:
    import engine  # noqa: F401  (OpenBLAS before MLX)
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    from engine.models.diffusion_gemma import ModelConfig, Network

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    network = Network(ModelConfig.from_dict(config))  # lazy: nothing is allocated yet
    quantized: list[str] = []

    def predicate(path: str, module) -> bool | dict:
        if not hasattr(module, "to_quantized"):
            return False
        quantized.append(path)
        return {"group_size": GROUP_SIZE, "bits": 8} if EIGHT_BIT.search(path) else True

    nn.quantize(network, group_size=GROUP_SIZE, bits=BITS, class_predicate=predicate)
    layout = {name: (tuple(value.shape), value.dtype) for name, value in tree_flatten(network.parameters())}
    del network
    mx.random.seed(seed)
    shards: list[dict] = [{}]
    sizes = [0]
    for name, (shape, dtype) in sorted(layout.items()):
        tensor = random_tensor(name, shape, dtype, layout)
        mx.eval(tensor)
        if sizes[-1] and sizes[-1] + tensor.nbytes > shard_bytes:
            shards.append({})
            sizes.append(0)
        shards[-1][name] = tensor
        sizes[-1] += tensor.nbytes
    weight_map = {}
    for i, shard in enumerate(shards):
        file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        mx.save_safetensors(str(folder / file), shard, metadata={"format": "mlx"})
        weight_map.update({name: file for name in shard})
        shard.clear()
    index = {"metadata": {"total_size": sum(sizes)}, "weight_map": dict(sorted(weight_map.items()))}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    config = dict(config)
    config["quantization"] = config["quantization_config"] = quantization_block(quantized)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    (folder / "generation_config.json").write_text(json.dumps(config["generation_config"], indent=2) + "\n")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"):
        shutil.copy(FIXTURE / name, folder / name)
    return {"tensors": len(layout), "bytes": sum(sizes), "shards": len(shards), "quantized_modules": len(quantized)}


def random_tensor(name: str, shape: tuple, dtype, layout: dict):
    """Random content of the right shape and dtype. Codes are uniform; scale s and bias -s * (2^b - 1) / 2
    centre each dequantized weight on 0 with spread ~ s * 2^b / sqrt(12), here ~0.02 (a trained model's order)."""
    import mlx.core as mx

    if dtype == mx.uint32:  # packed codes
        return mx.random.randint(-2**31, 2**31 - 1, shape, dtype=mx.int32).view(mx.uint32)
    if name.endswith((".scales", ".biases")):
        codes = layout[name.rsplit(".", 1)[0] + ".weight"]
        bits = 32 * codes[0][-1] // (shape[-1] * GROUP_SIZE)
        scale = 0.07 / (2**bits)
        value = scale if name.endswith(".scales") else -scale * (2**bits - 1) / 2
        return mx.full(shape, value, dtype=mx.bfloat16)
    # Norm weights, layer scalars, router scales: the network's own initial values (ones), small.
    return mx.ones(shape, dtype=mx.bfloat16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--layers", type=int, default=REAL_TEXT["num_hidden_layers"])
    parser.add_argument("--shard-gib", type=float, default=4.0)
    args = parser.parse_args()
    config = real_size_config(num_hidden_layers=args.layers)
    print(json.dumps(write_random_quantized(args.folder, config, shard_bytes=int(args.shard_gib * 2**30))))


if __name__ == "__main__":
    main()
