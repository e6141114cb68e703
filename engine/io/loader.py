"""`engine.load(model)`: a checkpoint folder or Hub id -> a ready `Model` (network, tokenizer, processor)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import mlx.core as mx

from ..cpu import device
from .checkpoint import CheckpointFiles, ProgressCallback, read_configs, resolve
from .weights import apply_quantization, load_into, load_tensors
from ..errors import CheckpointError
from ..events import ModelInfo
from ..models.families import FAMILIES
from ..images.files import displayed_size
from ..thread.release import own_this_thread



@dataclass
class Model:
    family: str                  # model_type: "diffusion_gemma" | "llada2_moe"
    label: str                   # "DiffusionGemma" | "LLaDA-2 MoE"
    path: Path
    name: str
    config: Any                  # the family's ModelConfig
    generation_config: dict
    network: Any
    tokenizer: Any
    processor: Any = None        # image processor, when the checkpoint has a vision tower

    @property
    def supports_images(self) -> bool:
        return self.processor is not None

    def setting_defaults(self) -> dict:
        """The value each `engine.Settings` field left as None takes with this checkpoint (pure Python)."""
        return FAMILIES[self.family].generation().checkpoint_defaults(self)

    def notices(self) -> tuple[str, ...]:
        """Lines a person running this model should read once (e.g. a CPU without OpenBLAS)."""
        return device.notices()

    def info(self) -> ModelInfo:
        """What a UI may know about this model: plain data, decoded once here on the engine thread."""
        return ModelInfo(
            name=self.name,
            family=self.family,
            label=self.label,
            supports_images=self.supports_images,
            setting_defaults=self.setting_defaults(),
            token_texts=self.tokenizer.token_texts(self.network.vocab_size),
            image_budget=self.processor.budget if self.processor is not None else None,
            context_length=self.network.context_length,
            thinking=self.tokenizer.has_thinking_channel(),
            # Holds the tokenizer and plain numbers, never the model: a UI keeping its ModelInfo must not keep
            # the network (and its MLX arrays) alive after the engine thread dropped it.
            notices=self.notices(),
            count_tokens=partial(self.tokenizer.count_chat, image_cost=partial(
                _image_cost, self.processor.budget) if self.processor is not None else None),
        )


def _image_cost(budget, path: str) -> int:
    """Soft tokens an image file will cost, from its header (0 if it cannot be read)."""
    size = displayed_size(path)
    return budget.soft_token_count(*size) if size else 0


def family_of(files: CheckpointFiles) -> str:
    model_type = files.config.get("model_type")
    if model_type not in FAMILIES:
        known = ", ".join(sorted(FAMILIES))
        raise CheckpointError(
            f"unsupported model_type {model_type!r} in {files.path / 'config.json'}; diffusion-chat runs: {known}"
        )
    return model_type


def build_network(files: CheckpointFiles):
    """Construct the family's network from config.json and load its weights (quantized where stored so)."""
    family = family_of(files)
    module = FAMILIES[family].network()
    config = module.ModelConfig.from_dict(files.config)
    network = module.Network(config)
    weights = network.sanitize(load_tensors(files.path))
    quantization = files.config.get("quantization") or files.config.get("quantization_config")
    apply_quantization(network, weights, quantization)
    weights = device.backend_weights(weights)
    load_into(network, weights)
    del weights
    mx.eval(network.parameters())
    return module, config, network


def load(model: str | Path, progress: ProgressCallback | None = None, cancel=None) -> Model:
    from .tokenizer import Tokenizer

    own_this_thread()  # a thread that builds MLX state releases it when it ends (engine.thread.release)

    path = resolve(model, progress, cancel)
    name = _display_name(model, path)
    # The stages after a download say what they do (the first load of a demo spends seconds in them).
    size = sum(file.stat().st_size for file in path.glob("*.safetensors"))
    reading = f"reading {name} ({size / 2**20:,.0f} MiB)"
    if progress is not None:
        progress(0, size or None, reading, stage="read")
    files = read_configs(path)
    family = family_of(files)
    module, config, network = build_network(files)
    tokenizer = Tokenizer.from_checkpoint(path, files, family)
    processor = module.make_processor(path, config, tokenizer)
    if progress is not None:
        progress(size, size or None, reading, stage="read")
    # The load's converted-away copies handed back; the host kernels compiled
    device.after_load(None if progress is None else lambda text: progress(0, None, text, stage="compile"))
    return Model(
        family=family,
        label=FAMILIES[family].label,
        path=path,
        name=name,
        config=config,
        generation_config=files.generation_config,
        network=network,
        tokenizer=tokenizer,
        processor=processor,
    )


def _display_name(model: str | Path, path: Path) -> str:
    text = str(model)
    if not Path(text).expanduser().exists() and text.count("/") == 1:
        return text  # a Hub id
    return path.resolve().name
