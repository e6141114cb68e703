"""What every command of the command line shares: one-line argparse errors, the model and sampler flags (from
the settings schema) and one-line failures."""

from __future__ import annotations

import argparse
import sys

class Parser(argparse.ArgumentParser):
    """argparse, but a bad flag is one line too (argparse would print the whole usage first)."""

    def error(self, message: str):
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def add_model_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", "-m", help="checkpoint folder or Hugging Face id")
    parser.add_argument("--image", action="append", default=[], metavar="PATH",
                        help="attach an image (repeatable; DiffusionGemma checkpoints with a vision tower)")
    parser.add_argument("--think", action="store_true", help="let the model think first (reasoning channel)")


SAVED_OR_CHECKPOINT = "left out = the saved setting, else the checkpoint's generation_config"


def add_sampler_flags(parser: argparse.ArgumentParser, left_out: str = SAVED_OR_CHECKPOINT) -> None:
    """One flag per `engine.Settings` field, from its schema. A flag left out is absent from the result (not
    "equal to the default"), so it never overrides a saved setting; booleans also get a `--no-` form.
    `left_out` says what a flag left out means for this command."""
    from engine.settings import SPECS, flag

    groups = {
        "both": parser.add_argument_group("generation (both families)", left_out),
        "diffusion_gemma": parser.add_argument_group("DiffusionGemma"),
        "llada2_moe": parser.add_argument_group("LLaDA-2"),
    }
    for name, spec in SPECS.items():
        group = groups["both" if len(spec.families) > 1 else spec.families[0]]
        options = dict(dest=name, default=argparse.SUPPRESS, help=spec.help)
        if spec.kind is bool:
            group.add_argument(flag(name), action=argparse.BooleanOptionalAction, **options)
        else:
            # Choices are checked by the schema (one message style), not by argparse.
            group.add_argument(flag(name), type=spec.kind, metavar=_metavar(spec), **options)


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
