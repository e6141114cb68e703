"""The demo trainer's smoke run: 20 steps of each family on the CPU through the device-agnostic path (`--device
cpu`, batches made by a worker process, a stop and a resume from state.pt), and the engine loads what it exported.

Training needs PyTorch: the test extra installs it (CPU build), so the trainer runs with this interpreter. A separate
environment can be named instead by DIFFUSION_CHAT_TRAIN_PYTHON (or found at .venv-train/bin/python)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

import engine

REPO = Path(__file__).resolve().parents[1]


def train_python() -> str | None:
    for candidate in (os.environ.get("DIFFUSION_CHAT_TRAIN_PYTHON"), str(REPO / ".venv-train" / "bin" / "python")):
        if candidate and Path(candidate).exists():
            return candidate
    return sys.executable if find_spec("torch") and find_spec("safetensors") else None


pytestmark = pytest.mark.skipif(train_python() is None, reason="no PyTorch environment: set "
                                "DIFFUSION_CHAT_TRAIN_PYTHON to a python with torch, numpy, tokenizers, safetensors")


def train(out: Path, family: str, *extra: str) -> str:
    command = [train_python(), "-m", "scripts.demo.train", "--family", family, "--out", str(out), "--size", "tiny",
               "--steps", "20", "--device", "cpu", "--examples-per-chunk", "48",
               "--token-budget", "1024", "--warmup", "5", "--log-every", "5", "--checkpoint-every", "10",
               "--eval-every", "0", "--threads", "1", "--composed-chat", "0.5", *extra]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.mark.parametrize("family", ["diffusion_gemma", "llada2_moe"])
def test_twenty_cpu_steps_stop_resume_and_export_a_loadable_checkpoint(tmp_path, family):
    out = tmp_path / family
    # The first phase makes its batches in this process, the resumed one in a worker: the stream is the same.
    first = train(out, family, "--stop-at", "10", "--workers", "0")
    assert '"stopped_at": 10' in first
    second = train(out, family, "--workers", "1")
    assert "resumed at step 10" in second
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in records if "loss" in r]
    assert [r["step"] for r in records if "loss" in r] == [5, 10, 15, 20]
    assert all(math.isfinite(loss) and loss > 0 for loss in losses)
    model = engine.load(str(out / "model"))
    assert model.family == family
    finished = list(engine.generate(model, messages=[{"role": "user", "content": "hi"}],
                                    settings=engine.Settings(max_tokens=8)))[-1]
    assert finished.stats.generated_tokens >= 1
    if family == "llada2_moe":   # a fine-tune starts from a checkpoint's weights (here: the one just exported)
        again = train(tmp_path / "again", family, "--init-from", str(out / "model"), "--stop-at", "1")
        assert f"weights from {out / 'model' / 'model.safetensors'}" in again


def test_init_from_the_8bit_bundled_diffusion_gemma_demo_keeps_its_answers(tmp_path):
    """--init-from dequantizes the bundled demo (scripts/demo/dequantize.py) into the trainer's network: at a
    learning rate of 0 the exported float checkpoint is the demo itself, so the engine answers it alike."""
    demo = REPO / "tui" / "demo" / "diffusion-gemma-demo"
    out = tmp_path / "dg"
    command = [train_python(), "-m", "scripts.demo.train", "--family", "diffusion_gemma", "--out", str(out),
               "--init-from", str(demo), "--steps", "1", "--lr", "0", "--min-lr", "0", "--warmup", "1",
               "--weight-decay", "0", "--device", "cpu", "--workers", "0", "--examples-per-chunk", "8",
               "--token-budget", "512", "--eval-every", "0", "--threads", "1", "--focus", "chat"]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"weights from {demo / 'model.safetensors'}" in result.stdout
    settings = engine.Settings(temp=0.0, max_tokens=48)
    for prompt in ("hi", "thanks!", "who are you?"):
        answers = [list(engine.generate(engine.load(str(folder)), messages=[{"role": "user", "content": prompt}],
                                        settings=settings))[-1].content for folder in (demo, out / "model")]
        assert answers[0] == answers[1] and answers[0].strip()
