"""What every command of the command line shares: one-line argparse errors, the model and sampler flags (from
the settings schema) and one-line failures."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Callable

# The largest integer any flag takes: beyond it an id, a seed or a count is no longer a number the engine,
# NumPy or SQLite can hold. Floats with no range of their own stay within MAX_FLOAT_FLAG: no setting means
# anything past it, and arithmetic on it stays finite.
MAX_INT_FLAG = 2**63 - 1
MAX_FLOAT_FLAG = 1e12

class Parser(argparse.ArgumentParser):
    """argparse, but a bad flag is one line too (argparse would print the whole usage first)."""

    def error(self, message: str):
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def number(kind: type, low: float | None = None, high: float | None = None) -> Callable[[str], float]:
    """The argparse `type` of every numeric flag: an int or a finite float in [low, high] (None: within
    MAX_INT_FLAG / MAX_FLOAT_FLAG), else argparse's one usage line ("argument --max-body-mb: ... not 'nan'")."""
    most = MAX_INT_FLAG if kind is int else MAX_FLOAT_FLAG
    lowest, highest = -most if low is None else low, most if high is None else high

    def parse(text: str):
        try:
            value = kind(text.strip()) if kind is float or len(text.strip()) <= 30 else None
        except ValueError:
            value = None
        noun = "an integer" if kind is int else "a finite number"
        if value is None or (kind is float and not math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"must be {noun}, not {_quoted(text)}")
        if not lowest <= value <= highest:
            raise argparse.ArgumentTypeError(
                f"must be {noun} in {_bound(lowest)}..{_bound(highest)}, not {_quoted(text)}")
        return value

    parse.__name__ = kind.__name__   # argparse names the type in "invalid int value" messages
    return parse


def _bound(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _quoted(text: str) -> str:
    return repr(text if len(text) <= 30 else text[:27] + "...")


def add_model_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", "-m", help="checkpoint folder or Hugging Face id")
    parser.add_argument("--image", action="append", default=[], metavar="PATH",
                        help="attach an image (repeatable; DiffusionGemma checkpoints with a vision tower)")
    parser.add_argument("--think", action="store_true", help="let the model think first (reasoning channel)")


SAVED_OR_CHECKPOINT = "left out = the saved setting, else the checkpoint's generation_config"


def add_sampler_flags(parser: argparse.ArgumentParser, left_out: str = SAVED_OR_CHECKPOINT,
                      helps: dict[str, str] | None = None) -> None:
    """One flag per `engine.Settings` field, from its schema. A flag left out is absent from the result (not
    "equal to the default"), so it never overrides a saved setting; booleans also get a `--no-` form.
    `left_out` says what a flag left out means for this command; `helps` replaces a field's help text where
    this command's default differs from the schema's."""
    from engine.settings import SPECS, flag

    groups = {
        "both": parser.add_argument_group("generation (both families)", left_out),
        "diffusion_gemma": parser.add_argument_group("DiffusionGemma"),
        "llada2_moe": parser.add_argument_group("LLaDA-2"),
    }
    for name, spec in SPECS.items():
        group = groups["both" if len(spec.families) > 1 else spec.families[0]]
        options = dict(dest=name, default=argparse.SUPPRESS, help=(helps or {}).get(name, spec.help))
        if spec.kind is bool:
            group.add_argument(flag(name), action=argparse.BooleanOptionalAction, **options)
        else:
            # Choices are checked by the schema (one message style), not by argparse.
            # Numbers only need to be finite numbers here; their ranges are the schema's (one message style).
            kind = number(spec.kind) if spec.kind in (int, float) else spec.kind
            group.add_argument(flag(name), type=kind, metavar=_metavar(spec), **options)


def _metavar(spec) -> str:
    return {int: "N", float: "X", str: "NAME"}[spec.kind]


def settings_from_args(args: argparse.Namespace):
    """The settings given on the command line (only those), checked."""
    from engine.settings import SPECS, Settings

    return Settings(**{name: getattr(args, name) for name in SPECS if hasattr(args, name)}).validated()


def fail(message: str, code: int = 1) -> int:
    print(f"diffusion-chat: error: {message}", file=sys.stderr)
    return code


def fail_with(error: Exception) -> int:
    """An EngineError as one line; settings are named by their flags here (and only here)."""
    from engine.errors import SettingsError
    from engine.settings import flag

    return fail(error.render(flag) if isinstance(error, SettingsError) else str(error))
