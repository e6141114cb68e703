"""The model families diffusion-chat runs: one `Family` object each, plain data (no MLX) so that settings files,
pickers and panels can name them without loading the engine, with typed lazy accessors for the family's two
modules (its network and its generation), imported only when a checkpoint of that family is loaded.

`model_type` is what a checkpoint's config.json says. The two module interfaces are the Protocols below; a test
checks every family's modules against them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, runtime_checkable

DIFFUSION_GEMMA = "diffusion_gemma"
LLADA2 = "llada2_moe"


@runtime_checkable
class NetworkModule(Protocol):
    """A family's network module (engine.models.*): its config, its network, its image processor."""

    ModelConfig: type        # .from_dict(config.json) -> the config the Network takes
    Network: type            # Network(config): an mlx.nn.Module with sanitize(), vocab_size, context_length

    def make_processor(self, path: Path, config: Any, tokenizer: Any = None) -> Any | None:
        """The checkpoint's image processor, or None (no vision tower, or a text-only family)."""


@runtime_checkable
class GenerationModule(Protocol):
    """A family's generation module (engine.generation.*): its plan of a request and its denoiser."""

    def plan_for(self, model: Any, settings: Any) -> Any:
        """The request's resolved plan (settings over the checkpoint's defaults); SettingsError on bad values."""

    def build(self, model: Any, plan: Any, randomness_for: Callable[[int], Any], pixel_values: Any = None,
              token_type_ids: Any = None) -> Any:
        """The denoiser for one request with that plan; InputError, before any work, on input it cannot take."""

    def checkpoint_defaults(self, model: Any) -> dict:
        """What each setting left unset means for this checkpoint (for a settings panel)."""


@dataclass(frozen=True)
class Family:
    model_type: str
    label: str                      # what people read
    _network: str                   # the modules' names: imported on first use, so this module stays MLX-free
    _generation: str

    def network(self) -> NetworkModule:
        return importlib.import_module(self._network)

    def generation(self) -> GenerationModule:
        return importlib.import_module(self._generation)


FAMILIES: dict[str, Family] = {
    DIFFUSION_GEMMA: Family(DIFFUSION_GEMMA, "DiffusionGemma", "engine.models.diffusion_gemma",
                            "engine.generation.diffusion_gemma"),
    LLADA2: Family(LLADA2, "LLaDA-2 MoE", "engine.models.llada2_moe", "engine.generation.llada2"),
}
FAMILY_NAMES: tuple[str, ...] = tuple(FAMILIES)


def family_label(model_type: str) -> str:
    family = FAMILIES.get(model_type)
    return family.label if family else model_type
