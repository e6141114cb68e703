"""Generation settings: one schema from which the CLI flags, validation, the sampler panel and the settings
file checks are all derived.

Every `Settings` field is `None` until someone sets it: `None` means "the checkpoint's value" (its
`generation_config.json`, else the family's documented default), so a flag that was not given, a panel field
left empty and a key missing from the settings file all mean the same thing, and any value that *was* given —
`--seed 0`, `--no-diffusion-full-canvas` — overrides a saved one.

Each field carries a `Spec` (kind, range, families, panel label, help). Errors are `SettingsError`s that name
the setting; the CLI renders those names as flags (`--top-p`), the panel as labels.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from .errors import SettingsError
from .models.families import DIFFUSION_GEMMA, LLADA2

SAMPLERS = ("entropy-bound", "confidence-threshold")
LLADA_MODES = ("quality", "speed")
BOTH = (DIFFUSION_GEMMA, LLADA2)
DG = (DIFFUSION_GEMMA,)
LL = (LLADA2,)


@dataclass(frozen=True)
class Spec:
    kind: type                          # int, float, bool or str
    families: tuple[str, ...]
    label: str                          # the sampler panel's label
    help: str                           # the CLI's help (defaults included)
    minimum: float | None = None
    exclusive_minimum: bool = False
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    choice_noun: str = "value"          # "unknown sampler 'x'"
    family_labels: Mapping[str, str] = field(default_factory=dict)

    def label_for(self, family: str | None) -> str:
        return self.family_labels.get(family, self.label) if family else self.label

    def requirement(self) -> str:
        """What a valid value is, as the end of "... must be ___"."""
        if self.kind is bool:
            return "true or false"
        if self.kind is str:
            return "one of: " + ", ".join(self.choices)
        if self.kind is int:
            return {1: "a positive integer", 0: "a non-negative integer"}.get(self.minimum, "an integer")
        if self.maximum is not None:
            return f"in ({self.minimum:g}, {self.maximum:g}]" if self.exclusive_minimum else \
                f"in [{self.minimum:g}, {self.maximum:g}]"
        if self.minimum is not None:
            return f"> {self.minimum:g}" if self.exclusive_minimum else f">= {self.minimum:g}"
        return "a number"


def _spec(kind: type, families: tuple[str, ...], label: str, help: str, **options) -> Any:
    return field(default=None, metadata={"spec": Spec(kind, families, label, help, **options)})


@dataclass(frozen=True)
class Settings:
    """Field order is the order of the sampler panel and of `--help`."""

    diffusion_sampler: str | None = _spec(
        str, DG, "Sampler", "entropy-bound (official, default) or confidence-threshold (mlx-vlm's heuristic)",
        choices=SAMPLERS, choice_noun="sampler")
    max_denoising_steps: int | None = _spec(
        int, BOTH, "Steps (max per block)", "denoising steps per block at most (DiffusionGemma: checkpoint, 48; "
        "LLaDA-2: 32)", minimum=1)
    block_length: int | None = _spec(int, LL, "Block length", "block length (32)", minimum=1)
    diffusion_threshold: float | None = _spec(
        float, BOTH, "Threshold", "confidence needed to accept / unmask, in (0, 1] (confidence-threshold "
        "sampler 0.9; LLaDA-2 0.95)", minimum=0.0, exclusive_minimum=True, maximum=1.0,
        family_labels={DIFFUSION_GEMMA: "Threshold (confidence sampler)", LLADA2: "Threshold start"})
    diffusion_threshold_end: float | None = _spec(
        float, LL, "Threshold end", "threshold at the last step of a block (linear schedule from "
        "--diffusion-threshold; default: constant)", minimum=0.0, exclusive_minimum=True, maximum=1.0)
    max_transfer_per_step: int | None = _spec(
        int, LL, "Most unmasked per step", "unmask at most this many positions a step, the most confident first "
        "(never fewer than the step's share of the block; 0 = no cap, the official algorithm)", minimum=0)
    llada_mode: str | None = _spec(
        str, LL, "LLaDA-2.1 mode", "LLaDA-2.1 preset (the official modes): quality (threshold 0.7, editing at 0.5, 16 "
        "post steps) or speed (threshold 0.5, editing at 0, 16); settings given beside it win", choices=LLADA_MODES,
        choice_noun="LLaDA mode")
    token_editing: bool | None = _spec(
        bool, LL, "Token editing", "LLaDA-2.1 token editing on or off (default: on for 2.1 checkpoints, a preset or "
        "an editing threshold; off for 2.0 checkpoints, which editing corrupts)")
    editing_threshold: float | None = _spec(
        float, LL, "Editing threshold", "LLaDA-2.1 token editing: re-write a filled position whose candidate "
        "differs with confidence above this, in [0, 1]; 0 = every changed position (as the official code); "
        "turn editing off with --no-token-editing (default 0.9)", minimum=0.0, maximum=1.0)
    max_post_steps: int | None = _spec(
        int, LL, "Editing steps after the last mask", "LLaDA-2.1: editing steps after a block's last mask is gone "
        "(16); a step without an edit ends the block", minimum=0)
    entropy_bound: float | None = _spec(
        float, DG, "Entropy bound", "entropy budget per step in nats (checkpoint: 0.1)", minimum=0.0,
        exclusive_minimum=True)
    t_min: float | None = _spec(float, DG, "Temperature at the last step", "schedule temperature at the last "
                                "step (checkpoint: 0.4)", minimum=0.0)
    t_max: float | None = _spec(float, DG, "Temperature at the first step", "schedule temperature at the first "
                                "step (checkpoint: 0.8)", minimum=0.0)
    stability_threshold: int | None = _spec(
        int, DG, "Stop: stable steps", "early stop: argmax unchanged for this many steps (checkpoint: 1)", minimum=0)
    confidence_threshold: float | None = _spec(
        float, DG, "Stop: mean entropy below", "early stop: mean entropy below this (checkpoint: 0.005)",
        minimum=0.0, exclusive_minimum=True)
    diffusion_min_canvas_length: int | None = _spec(int, DG, "Min canvas", "shortest canvas for the last block "
                                                    "(64)", minimum=1)
    diffusion_max_canvas_length: int | None = _spec(int, DG, "Max canvas", "longest canvas (the checkpoint's "
                                                    "canvas_length)", minimum=1)
    diffusion_full_canvas: bool | None = _spec(bool, DG, "Full canvas", "always use the checkpoint's canvas "
                                               "length (the official algorithm; default off)")
    temp: float | None = _spec(
        float, BOTH, "Temperature", "proposal temperature: DiffusionGemma 1.0 = the official distribution, "
        "0 = argmax; LLaDA-2 0 = greedy (default)", minimum=0.0)
    top_k: int | None = _spec(int, LL, "Top-k", "sample among the k most likely tokens (0 = off)", minimum=0)
    top_p: float | None = _spec(float, LL, "Top-p", "sample from the smallest set with probability mass p "
                                "(1 = off)", minimum=0.0, exclusive_minimum=True, maximum=1.0)
    seed: int | None = _spec(int, BOTH, "Seed", "seed of every random draw (default 0)", minimum=0)
    max_tokens: int | None = _spec(int, BOTH, "Max tokens", "most tokens to generate (default: the "
                                   "checkpoint's max_new_tokens, else 256)", minimum=1)

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)

    def updated(self, other: Settings) -> Settings:
        """These settings with every value `other` sets on top."""
        return self.replace(**other.to_dict())

    def to_dict(self) -> dict[str, Any]:
        """The values that are set (None = unset is left out)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Settings:
        unknown = sorted(set(data) - set(SPECS))
        if unknown:
            raise SettingsError("unknown setting(s): " + ", ".join(unknown))
        return cls(**{name: coerce(name, value) for name, value in data.items()}).validated()

    def validated(self) -> Settings:
        """Check every value that is set; the first problem raises a SettingsError naming the setting."""
        for name, value in self.to_dict().items():
            coerce(name, value)
        if self.t_min is not None and self.t_max is not None:
            check_temperature_schedule(self.t_min, self.t_max)
        low, high = self.diffusion_min_canvas_length, self.diffusion_max_canvas_length
        if low is not None and high is not None and low > high:
            raise SettingsError("{0} must not exceed {1}", "diffusion_min_canvas_length",
                                "diffusion_max_canvas_length")
        return self


SPECS: dict[str, Spec] = {f.name: f.metadata["spec"] for f in fields(Settings)}


def specs_for(family: str) -> dict[str, Spec]:
    """The settings a family reads, in panel order."""
    return {name: spec for name, spec in SPECS.items() if family in spec.families}


def coerce(name: str, value: Any) -> Any:
    """`value` as the setting's kind (an int is fine for a float), checked against its range; else SettingsError.

    None (unset) passes through. A value of the wrong type is named as such ("must be an integer"), one of the
    right type but outside the range by its range ("must be a positive integer")."""
    spec = SPECS[name]
    if value is None:
        return None
    if spec.kind is bool:
        ok = isinstance(value, bool)
    elif spec.kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif spec.kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    else:
        ok = isinstance(value, str)
    if not ok:
        raise SettingsError("{0} must be " + _KIND_NAMES[spec.kind] + f", got {_literal(value)}", name)
    if spec.kind is float:
        value = float(value)
    if spec.choices and value not in spec.choices:
        raise SettingsError(f"unknown {spec.choice_noun} {_literal(value)} for {{0}}; choose one of: "
                            + ", ".join(spec.choices), name)
    if spec.kind in (int, float) and not _in_range(spec, value):
        raise SettingsError("{0} must be " + spec.requirement() + f", got {_literal(value)}", name)
    return value


_KIND_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _literal(value: Any) -> str:
    """`repr(value)` made safe inside a message template (its braces are not placeholders)."""
    return repr(value).replace("{", "{{").replace("}", "}}")


def _in_range(spec: Spec, value: float) -> bool:
    if spec.minimum is not None and (value <= spec.minimum if spec.exclusive_minimum else value < spec.minimum):
        return False
    return spec.maximum is None or value <= spec.maximum


def parse_text(name: str, text: str) -> Any:
    """A typed field (the sampler panel) as the setting's value; empty text is None (the checkpoint's value)."""
    spec = SPECS[name]
    text = text.strip()
    if not text:
        return None
    if spec.kind in (int, float):
        try:
            value = spec.kind(text)
        except ValueError:
            raise SettingsError("{0} must be " + _KIND_NAMES[spec.kind] + f", got {_literal(text)}", name) from None
        return coerce(name, value)
    if spec.kind is bool:
        # Typed text ("true", "off") must not reach coerce as a string: it would refuse "true" as not true or false.
        value = _BOOL_WORDS.get(text.lower())
        if value is None:
            raise SettingsError("{0} must be true or false, got " + _literal(text), name)
        return value
    return coerce(name, text)


_BOOL_WORDS = {"true": True, "on": True, "yes": True, "1": True, "false": False, "off": False, "no": False, "0": False}


def check_temperature_schedule(t_min: float, t_max: float) -> None:
    """The one rule of the schedule, checked on the settings and again once checkpoint defaults fill the gaps."""
    if not t_max > t_min:
        raise SettingsError(f"{{0}} ({t_max:g}) must be greater than {{1}} ({t_min:g})", "t_max", "t_min")


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")
