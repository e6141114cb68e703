"""The held-out accuracy a trainer logs as it goes, measured by the engine itself: bench/eval_demo.py run in the
app's environment (MLX), a separate process, since the trainer's environment is PyTorch's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENGINE_PYTHON = os.environ.get("DIFFUSION_CHAT_ENGINE_PYTHON", str(REPO / ".venv" / "bin" / "python"))


def evaluate(model_dir: Path, n: int) -> dict:
    """Held-out accuracy by the engine itself (its own environment, a separate process)."""
    command = [ENGINE_PYTHON, str(REPO / "bench" / "eval_demo.py"), "--model", str(model_dir), "--n", str(n)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=3600)
    if result.returncode != 0:
        return {"error": (result.stderr or result.stdout).strip().splitlines()[-1:]}
    return {task: row["accuracy"] for task, row in json.loads(result.stdout)["tasks"].items()}
