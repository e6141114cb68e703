"""Convert a demo checkpoint to the mlx-community quantized layout, with the engine's own loader and MLX.

    python -m scripts.demo.quantize SOURCE DESTINATION [--bits 4] [--group-size 64] [--keep-8bit PATTERN ...]

SOURCE is a Hugging Face layout folder (scripts/demo/train.py's export); DESTINATION gets what an
mlx-community repository holds: the sanitized MLX parameter tree with `.scales` / `.biases` beside every
quantized weight in `model.safetensors` plus its `model.safetensors.index.json`, and config.json with a
`quantization` entry (mixed recipes: per-module `{"bits": 8}` overrides, as mlx-community's DiffusionGemma
repositories do), the tokenizer files and the chat template copied unchanged.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

import engine  # noqa: F401  (first: OpenBLAS before MLX)
import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

from engine.io.checkpoint import read_configs
from engine.io.loader import build_network

COPIED = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
          "generation_config.json")


def quantize(source: Path, destination: Path, bits: int, group_size: int, keep_8bit: list[str]) -> dict:
    files = read_configs(source)
    _, _, network = build_network(files)
    patterns = [re.compile(p) for p in keep_8bit]
    overrides: dict[str, dict] = {}

    def predicate(path: str, module: nn.Module):
        if not hasattr(module, "to_quantized"):
            return False
        weight = getattr(module, "weight", None)
        if weight is None or weight.shape[-1] % group_size:
            return False  # a dimension the group size does not divide stays in float
        if any(p.search(path) for p in patterns):
            overrides[path] = {"group_size": group_size, "bits": 8}
            return {"group_size": group_size, "bits": 8}
        return True

    nn.quantize(network, group_size=group_size, bits=bits, class_predicate=predicate)
    tensors = dict(tree_flatten(network.parameters()))
    destination.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(destination / "model.safetensors"), tensors, metadata={"format": "mlx"})
    index = {"metadata": {"total_size": sum(v.nbytes for v in tensors.values())},
             "weight_map": {name: "model.safetensors" for name in sorted(tensors)}}
    (destination / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    config = dict(files.config)
    config["quantization"] = {"group_size": group_size, "bits": bits, "mode": "affine", **overrides}
    config["quantization_config"] = config["quantization"]
    (destination / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    for name in COPIED:
        if (source / name).exists():
            shutil.copy2(source / name, destination / name)
    return {"tensors": len(tensors), "bytes": index["metadata"]["total_size"], "8-bit modules": len(overrides)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("destination", type=Path)
    parser.add_argument("--bits", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=64)
    parser.add_argument("--keep-8bit", nargs="*", default=[], metavar="PATTERN",
                        help="regular expressions of module paths quantized to 8 bits instead")
    args = parser.parse_args(argv)
    print(json.dumps(quantize(args.source, args.destination, args.bits, args.group_size, args.keep_8bit)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
