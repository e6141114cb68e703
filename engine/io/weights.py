"""A checkpoint's weights in MLX: every tensor read lazily, quantized modules swapped in, then loaded into a
network with one clear line for a missing, unexpected or wrongly shaped tensor.

Family modules turn the raw tensors into their own names (`sanitize`) in between; the loader
(`engine.io.loader`) runs the three in order.
"""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

from ..errors import CheckpointError
from .checkpoint import weight_files


def load_tensors(path: Path) -> dict[str, mx.array]:
    """All tensors of a checkpoint, lazily (MLX maps them; nothing is copied until used)."""
    tensors: dict[str, mx.array] = {}
    for file in weight_files(path):
        try:
            part = mx.load(str(file))
        except OSError as exc:  # permissions, I/O errors: the system's reason is the useful one
            raise CheckpointError(f"cannot read weights {file.name}: {exc}")
        except (RuntimeError, ValueError):
            # MLX's messages vary with where the file ends (header length, JSON, data offsets, short read);
            # all of them mean an interrupted download or a damaged file.
            raise CheckpointError(f"cannot read weights {file.name}: the file is truncated or corrupt; download it again")
        tensors.update(part)
    return tensors


def quantization_predicate(weights: dict[str, mx.array], quantization: dict):
    """nn.quantize predicate: quantize exactly the modules whose `<path>.scales` is in the checkpoint,
    with the per-path override (mixed recipes) when the config has one."""

    def predicate(path: str, module: nn.Module):
        if not hasattr(module, "to_quantized") or f"{path}.scales" not in weights:
            return False
        override = quantization.get(path)
        if isinstance(override, dict):
            params = {"group_size": override.get("group_size", quantization.get("group_size", 64)),
                      "bits": override.get("bits", quantization.get("bits", 4))}
            if "mode" in override or "mode" in quantization:
                params["mode"] = override.get("mode", quantization.get("mode", "affine"))
            return params
        return True

    return predicate


def apply_quantization(module: nn.Module, weights: dict[str, mx.array], quantization: dict | None) -> None:
    """Replace the modules that the checkpoint stores quantized by their quantized versions."""
    if not quantization:
        if any(k.endswith(".scales") for k in weights):
            raise CheckpointError("weights are quantized but config.json has no 'quantization' entry")
        return
    nn.quantize(
        module,
        group_size=quantization.get("group_size", 64),
        bits=quantization.get("bits", 4),
        mode=quantization.get("mode", "affine"),
        class_predicate=quantization_predicate(weights, quantization),
    )


def load_into(module: nn.Module, weights: dict[str, mx.array]) -> None:
    """Load sanitized weights, with one clear line for a missing, unexpected or wrongly shaped tensor."""
    expected = dict(tree_flatten(module.parameters()))
    missing = sorted(set(expected) - set(weights))
    if missing:
        raise CheckpointError(f"checkpoint lacks tensor {missing[0]}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    unexpected = sorted(set(weights) - set(expected))
    if unexpected:
        raise CheckpointError(f"unexpected tensor {unexpected[0]} in checkpoint" + (f" (and {len(unexpected) - 1} more)" if len(unexpected) > 1 else ""))
    for name, value in weights.items():
        if tuple(value.shape) != tuple(expected[name].shape):
            raise CheckpointError(
                f"tensor {name} has shape {tuple(value.shape)}, expected {tuple(expected[name].shape)} from config.json"
            )
    module.load_weights(list(weights.items()), strict=True)

