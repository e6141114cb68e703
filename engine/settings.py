"""Generation settings shared by both model families.

Field names are the CLI flags with underscores. `None` means "use the checkpoint's default" (its
`generation_config.json`, or the family's documented default when the checkpoint has none).
`resolve_*` functions in the family generators turn a `Settings` into concrete numbers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any

from .errors import SettingsError

SAMPLERS = ("entropy-bound", "confidence-threshold")


@dataclass
class Settings:
    # Shared
    max_tokens: int | None = None
    max_denoising_steps: int | None = None
    diffusion_threshold: float | None = None
    temp: float | None = None
    seed: int | None = 0
    think: bool = False
    # DiffusionGemma
    diffusion_sampler: str | None = None
    diffusion_min_canvas_length: int | None = None
    diffusion_max_canvas_length: int | None = None
    diffusion_full_canvas: bool = False
    entropy_bound: float | None = None
    t_min: float | None = None
    t_max: float | None = None
    stability_threshold: int | None = None
    confidence_threshold: float | None = None
    # LLaDA-2
    block_length: int | None = None
    diffusion_threshold_end: float | None = None
    top_k: int | None = None
    top_p: float | None = None

    def replace(self, **changes: Any) -> "Settings":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Settings":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SettingsError(f"unknown setting(s): {', '.join(unknown)}")
        return cls(**data).validated()

    def validated(self) -> "Settings":
        """Check every value that is set; raise SettingsError with one clear line on the first problem."""
        _positive_int(self, "max_tokens")
        _positive_int(self, "max_denoising_steps")
        _positive_int(self, "diffusion_min_canvas_length")
        _positive_int(self, "diffusion_max_canvas_length")
        _positive_int(self, "block_length")
        _non_negative_int(self, "stability_threshold")
        _non_negative_int(self, "top_k")
        for name in ("diffusion_threshold", "diffusion_threshold_end"):
            value = getattr(self, name)
            if value is not None and not (0.0 < float(value) <= 1.0):
                flag = "--" + name.replace("_", "-")
                raise SettingsError(f"{flag} must be in (0, 1], got {value}")
        if self.top_p is not None and not (0.0 < float(self.top_p) <= 1.0):
            raise SettingsError(f"--top-p must be in (0, 1], got {self.top_p}")
        if self.temp is not None and float(self.temp) < 0:
            raise SettingsError(f"--temp must be >= 0, got {self.temp}")
        for name in ("entropy_bound", "confidence_threshold"):
            value = getattr(self, name)
            if value is not None and float(value) <= 0:
                raise SettingsError(f"--{name.replace('_', '-')} must be > 0, got {value}")
        if self.t_min is not None and self.t_min < 0:
            raise SettingsError(f"--t-min must be >= 0, got {self.t_min}")
        if self.t_min is not None and self.t_max is not None and not self.t_max > self.t_min:
            raise SettingsError(f"--t-max ({self.t_max}) must be greater than --t-min ({self.t_min})")
        if self.diffusion_sampler is not None and self.diffusion_sampler not in SAMPLERS:
            raise SettingsError(
                f"unknown sampler {self.diffusion_sampler!r}; choose one of: {', '.join(SAMPLERS)}"
            )
        if (
            self.diffusion_min_canvas_length is not None
            and self.diffusion_max_canvas_length is not None
            and self.diffusion_min_canvas_length > self.diffusion_max_canvas_length
        ):
            raise SettingsError("--diffusion-min-canvas-length must not exceed --diffusion-max-canvas-length")
        if self.seed is not None and (not isinstance(self.seed, int) or self.seed < 0):
            raise SettingsError(f"--seed must be a non-negative integer, got {self.seed}")
        return self


def _positive_int(settings: Settings, name: str) -> None:
    value = getattr(settings, name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SettingsError(f"--{name.replace('_', '-')} must be a positive integer, got {value}")


def _non_negative_int(settings: Settings, name: str) -> None:
    value = getattr(settings, name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SettingsError(f"--{name.replace('_', '-')} must be a non-negative integer, got {value}")
