"""Write a random-weight DiffusionGemma checkpoint of any size, in the MLX layout, for benchmarks.

The tokenizer files come from the tiny test fixture (its 512 ids are a subset of the larger vocab),
so the checkpoint loads through `engine.load` like a real one.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import engine  # noqa: E402

engine.prepare_process()  # first: it loads OpenBLAS before MLX on Linux
import mlx.core as mx
from mlx.utils import tree_flatten

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "checkpoints" / "dg_text"

MID_SIZE = dict(hidden_size=512, num_hidden_layers=8, num_experts=32, top_k_experts=4, vocab_size=32768,
                num_attention_heads=8, num_key_value_heads=4, num_global_key_value_heads=1, head_dim=64,
                global_head_dim=128, intermediate_size=1024, moe_intermediate_size=256, sliding_window=1024)

REAL_VOCAB = dict(hidden_size=256, num_hidden_layers=4, num_experts=8, top_k_experts=2, vocab_size=262144,
                  num_attention_heads=4, num_key_value_heads=2, num_global_key_value_heads=1, head_dim=64,
                  global_head_dim=128, intermediate_size=512, moe_intermediate_size=128)
REAL_VOCAB_NAME = "random real-vocabulary (vocab 262144, hidden 256, 4 layers, 8 experts top-2, canvas 256)"


def write_random_dg_checkpoint(folder: Path, canvas_length: int = 256, seed: int = 0, **text_overrides) -> Path:
    from engine.models.diffusion_gemma import ModelConfig, Network

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = json.loads((FIXTURE / "config.json").read_text())
    text = {**config["text_config"], **MID_SIZE, **text_overrides}
    layers = text["num_hidden_layers"]
    text["layer_types"] = ["full_attention" if (i + 1) % 4 == 0 or i == layers - 1 else "sliding_attention"
                           for i in range(layers)]
    config.update(text_config=text, canvas_length=canvas_length)
    vocab = text["vocab_size"]
    config.update(boi_token_id=vocab - 7, image_token_id=vocab - 5, eoi_token_id=vocab - 3)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    for name in ("generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                 "chat_template.jinja"):
        shutil.copy(FIXTURE / name, folder / name)
    mx.random.seed(seed)
    network = Network(ModelConfig.from_dict(config))
    weights = dict(tree_flatten(network.parameters()))
    # Keep activations in a sane range: small random linear weights, unit norms.
    weights = {k: (v * 0.5 if v.ndim >= 2 else v) for k, v in weights.items()}
    mx.save_safetensors(str(folder / "model.safetensors"), weights, metadata={"format": "mlx"})
    return folder


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--canvas-length", type=int, default=256)
    args = parser.parse_args()
    print(write_random_dg_checkpoint(args.folder, args.canvas_length))
