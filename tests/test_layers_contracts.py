"""The project's layers, enforced: import-linter contracts (pyproject.toml), what really gets imported at run
time, and module size."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent


def test_import_linter_contracts_hold():
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert linter, "import-linter is a test dependency (pip install -e '.[test]')"
    result = subprocess.run([linter], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize("modules, forbidden", [
    # Plain data a UI, a settings file or a remote client needs, without MLX.
    ("engine.settings, engine.events, engine.errors, engine.models.families, engine.images.files, engine.images.budget, "
     "engine.serve.wire", ("mlx",)),
    # The server until the engine thread loads a model; the app's remote backend never.
    ("engine.serve.app, engine.serve.run", ("textual", "mlx")),
    ("tui.remote", ("textual", "mlx")),
    # The headless core, and the parts of the app that are not the UI.
    ("engine, engine.thread.worker, engine.generation.api, engine.io.loader", ("textual",)),
    ("tui.config, tui.store, themes", ("textual", "mlx")),
])
def test_deferred_imports_really_are_deferred(modules, forbidden):
    code = f"import sys, {modules}; bad = [m for m in {forbidden!r} if m in sys.modules]; assert not bad, bad"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr



def test_no_source_module_is_over_400_lines():
    long = [f"{path.relative_to(REPO)} ({count})" for folder in ("engine", "tui", "themes")
            for path in (REPO / folder).rglob("*.py")
            if (count := len(path.read_text(encoding="utf-8").splitlines())) > 400]
    assert not long, long
