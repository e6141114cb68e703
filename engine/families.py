"""The model families diffusion-chat runs, as plain data (no MLX), so settings files, pickers and panels can
name them without loading the engine.

`model_type` is what a checkpoint's config.json says; the loader imports `network` and `generation` only
when a checkpoint of that family is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

DIFFUSION_GEMMA = "diffusion_gemma"
LLADA2 = "llada2_moe"


@dataclass(frozen=True)
class Family:
    model_type: str
    label: str          # what people read
    network: str        # module with ModelConfig, Network
    generation: str     # module with Plan, resolve_plan, Denoiser


FAMILIES: dict[str, Family] = {
    DIFFUSION_GEMMA: Family(DIFFUSION_GEMMA, "DiffusionGemma", "engine.models.diffusion_gemma",
                            "engine.generation.diffusion_gemma"),
    LLADA2: Family(LLADA2, "LLaDA-2 MoE", "engine.models.llada2_moe", "engine.generation.llada2"),
}
FAMILY_NAMES: tuple[str, ...] = tuple(FAMILIES)


def family_label(model_type: str) -> str:
    family = FAMILIES.get(model_type)
    return family.label if family else model_type
