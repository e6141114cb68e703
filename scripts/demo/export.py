"""Write a trained PyTorch demo network as a Hugging Face style checkpoint folder the engine loads.

`config_for(family, ...)` (scripts/demo/configs.py, re-exported here) builds config.json in the shape of
the real checkpoints; `export_checkpoint` writes model.safetensors (the network's state_dict, which
already uses the HF tensor names), config.json and generation_config.json.
Tokenizer files are not written here (scripts/demo/tokenizers.py does that).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from .configs import FAMILIES, config_for, generation_config_for  # noqa: F401  (one import for callers)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def export_checkpoint(model: torch.nn.Module, folder, family: str, config: dict,
                      generation_config: dict | None = None, dtype: str = "float32") -> Path:
    """Write model.safetensors (float32 or bfloat16), config.json and generation_config.json into folder.

    The state_dict is written as it is: both demo networks name and shape their parameters exactly as the
    HF checkpoints do, so the engine's `sanitize` sees what it sees in a downloaded folder."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}")
    if config.get("model_type") != family:
        raise ValueError(f"config.json model_type is {config.get('model_type')!r}, not {family!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {name: value.detach().to(DTYPES[dtype]).contiguous().cpu() for name, value in model.state_dict().items()}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads(json.dumps(config))  # a copy, and proof that it is plain JSON
    config["dtype"] = dtype
    if family == "diffusion_gemma":
        config["text_config"]["dtype"] = dtype
    _write_json(folder / "config.json", config)
    _write_json(folder / "generation_config.json",
                generation_config if generation_config is not None else generation_config_for(family, config))
    return folder


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
