"""Float weights back from an mlx-community quantized checkpoint folder (MLX affine quantization), with NumPy only.

The bundled DiffusionGemma demo is stored quantized (scripts/demo/quantize.py, `bundle.py --bits 8`), so a
fine-tune that starts from it (`train.py --init-from`) needs its float weights again. MLX's affine layout: for
each quantized `X.weight` (uint32 words) there are `X.scales` and `X.biases`, one per group of `group_size`
consecutive inputs along the last axis, and an entry is `scales * q + biases`, q the unsigned `bits`-wide integer.
The integers are packed as one little-endian bit stream per row (for 2/4/8 bits: low bits of each word first;
3/5/6 bits straddle word boundaries), so unpacking the stream serves every width alike.

NumPy, not MLX or PyTorch: the trainer's environment and the app's both have it, and a test can check it
against `mx.quantize` in the app's environment, which has neither PyTorch nor the safetensors package (so the
file is read here: an 8-byte little-endian header length, a JSON header of dtype / shape / byte offsets, the data).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def unpack(words: np.ndarray, bits: int, count: int) -> np.ndarray:
    """The first `count` unsigned `bits`-wide integers of each row of little-endian packed uint32 `words`."""
    words = np.ascontiguousarray(words, dtype="<u4")
    if words.shape[-1] * 32 < count * bits:
        raise ValueError(f"{words.shape[-1]} words hold {words.shape[-1] * 32 // bits} values of {bits} bits, "
                         f"not {count}")
    stream = np.unpackbits(words.view(np.uint8).reshape(*words.shape[:-1], -1), axis=-1, bitorder="little")
    fields = stream[..., :count * bits].reshape(*words.shape[:-1], count, bits).astype(np.uint32)
    return (fields << np.arange(bits, dtype=np.uint32)).sum(axis=-1, dtype=np.uint32)


def dequantize(words: np.ndarray, scales: np.ndarray, biases: np.ndarray, bits: int, group_size: int) -> np.ndarray:
    """float32 weight [..., groups * group_size] from MLX's packed words and per-group scales / biases."""
    groups = scales.shape[-1]
    q = unpack(words, bits, groups * group_size).reshape(*scales.shape, group_size).astype(np.float32)
    weight = q * scales.astype(np.float32)[..., None] + biases.astype(np.float32)[..., None]
    return weight.reshape(*scales.shape[:-1], groups * group_size)


def quantization_of(config: dict) -> dict | None:
    """config.json's `quantization` block (mlx-community; `quantization_config` as a fallback), or None."""
    block = config.get("quantization") or config.get("quantization_config")
    if block and block.get("mode", "affine") != "affine":
        raise ValueError(f"quantization mode {block['mode']!r}: only MLX affine quantization is dequantized")
    return block or None


def module_settings(block: dict, module: str) -> tuple[int, int]:
    """(bits, group_size) of one module: a per-module override (mixed recipes, e.g. 8-bit embeddings in a
    4-bit checkpoint) or the checkpoint's defaults."""
    own = block.get(module)
    own = own if isinstance(own, dict) else {}
    return int(own.get("bits", block["bits"])), int(own.get("group_size", block["group_size"]))


def dequantized(tensors: dict[str, np.ndarray], block: dict) -> dict[str, np.ndarray]:
    """Every quantized weight made float again; `.scales` / `.biases` consumed, all other tensors unchanged."""
    out = {}
    for name, value in tensors.items():
        if name.endswith((".scales", ".biases")):
            continue
        module = name.removesuffix(".weight")
        if name.endswith(".weight") and module + ".scales" in tensors:
            bits, group_size = module_settings(block, module)
            biases = tensors.get(module + ".biases")
            if biases is None:
                raise ValueError(f"{module} has scales but no biases: not MLX affine quantization")
            value = dequantize(value, tensors[module + ".scales"], biases, bits, group_size)
        out[name] = value
    return out


DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "U32": "<u4", "I32": "<i4", "I64": "<i8", "U8": "u1",
          "I8": "i1", "BOOL": "?", "BF16": "<u2"}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a .safetensors file; bfloat16 (which NumPy lacks) is widened to float32 exactly."""
    data = Path(path).read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + size])
    body = memoryview(data)[8 + size:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] not in DTYPES:
            raise ValueError(f"{path}: {name} has dtype {entry['dtype']}, which this reader does not know")
        begin, end = entry["data_offsets"]
        value = np.frombuffer(body[begin:end], dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])
        if entry["dtype"] == "BF16":
            value = (value.astype(np.uint32) << 16).view(np.float32)
        out[name] = value.copy()
    return out


def load_float_weights(folder: Path) -> dict[str, np.ndarray]:
    """The folder's model.safetensors as float NumPy arrays, dequantized when config.json says it is quantized."""
    folder = Path(folder)
    tensors = read_safetensors(folder / "model.safetensors")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    block = quantization_of(config)
    if block is None:
        if any(name.endswith(".scales") for name in tensors):
            raise ValueError(f"{folder} has quantized tensors but config.json has no quantization block")
        return tensors
    return dequantized(tensors, block)


def as_network_names(arrays: dict[str, np.ndarray], own_names) -> dict[str, np.ndarray]:
    """The arrays renamed for a trainer network whose parameter names are `own_names`. An exported folder uses
    the networks' own state_dict names; a quantized one holds the engine's sanitized tree, which names the
    stacked experts `...experts.gate_up_proj.weight` where the network has the bare `...experts.gate_up_proj`."""
    own = set(own_names)
    renamed = {}
    for name, value in arrays.items():
        if name not in own and name.endswith(".weight") and name.removesuffix(".weight") in own:
            name = name.removesuffix(".weight")
        renamed[name] = value
    return renamed
