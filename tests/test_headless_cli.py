"""`diffusion-chat generate` and `serve` are headless: they start without Textual or the UI's modules (only the
dispatching entry point, tui.cli, and its package are loaded), so a server or a script never pays for the app."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Runs the real entry point with --help, then reports which UI modules the process had loaded.
PROBE = """
import json, sys
from tui.cli import main
try:
    main([{command!r}, "--help"])
except SystemExit:
    pass
loaded = sorted(m for m in sys.modules if m == "textual" or m.startswith(("textual.", "tui", "themes", "rich")))
print(json.dumps(loaded), file=sys.stderr)
"""


@pytest.mark.parametrize("command", ["generate", "serve"])
def test_headless_commands_import_no_ui(command):
    done = subprocess.run([sys.executable, "-c", PROBE.format(command=command)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"diffusion-chat {command}" in done.stdout   # the command's own help ran
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert loaded == ["tui", "tui.cli"], loaded


@pytest.mark.parametrize("command", ["generate", "serve"])
def test_headless_cli_modules_import_no_ui(command):
    """The engine.cli modules themselves (what a program embedding the CLI imports) load no tui at all."""
    code = (f"import sys, engine.cli.{command} as m; m.{command}_parser().format_help(); "
            "print(sorted(n for n in sys.modules if n.split('.')[0] in ('tui', 'textual', 'themes')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_app_command_still_reaches_the_ui():
    """The dispatch is by subcommand: the app's parser lives in tui.cli, not in the headless package."""
    from tui.cli import app_parser

    assert "--server" in app_parser().format_help()
