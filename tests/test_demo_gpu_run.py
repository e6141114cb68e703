"""The GPU lease's training (scripts/demo/gpu_run.py) rehearsed on the CPU: the runs train where only PyTorch is
(the GPU image has no MLX, Textual, platformdirs or tomli-w), stop by the clock, pack under what a device call
brings back, and unpack into checkpoints the engine loads; a lease where every run fails ends at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from argparse import Namespace
from pathlib import Path

import pytest

import engine
from scripts.demo import gpu_run
from scripts.demo.train import learning_rate

from test_demo_trainer import train_python

REPO = Path(__file__).resolve().parents[1]
ABSENT_ON_THE_GPU_IMAGE = ("mlx", "textual", "platformdirs", "tomli_w")


def torch_only_environment(tmp_path: Path) -> dict:
    """An environment whose Python cannot import what the GPU image lacks (sitecustomize blocks it)."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nfor name in %r:\n    sys.modules[name] = None\n" % (ABSENT_ON_THE_GPU_IMAGE,))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), str(REPO)])}


@pytest.mark.skipif(train_python() is None, reason="no PyTorch environment")
def test_runs_train_without_mlx_stop_by_the_clock_and_come_home_as_loadable_checkpoints(tmp_path):
    packs, runs = tmp_path / "packs", tmp_path / "runs"
    # --grace: a trainer's start-up (torch, the init weights, its worker) took over the default 60 s on a 2-core
    # machine that was running two more test suites and a pip install; the clock, not the grace, should stop it.
    command = [train_python(), "-m", "scripts.demo.gpu_run", "train", "--device", "cpu", "--seconds", "4",
               "--grace", "150", "--workers", "1", "--token-budget", "1024", "--quiet",
               "--only", "dg-chat,llada2-curriculum",
               "--out", str(packs), "--runs", str(runs)]
    result = subprocess.run(command, cwd=REPO, env=torch_only_environment(tmp_path), capture_output=True,
                            text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    summary = json.loads((packs / "summary.json").read_text())
    assert sorted(summary["runs"]) == ["dg-chat", "llada2-curriculum"]
    for name, run in summary["runs"].items():
        assert run["exit"] == 0 and run["error"] is None, (name, run)
        assert run["packed"] and 0 < run["bytes"] <= gpu_run.PACK_LIMIT
        assert run["steps"] >= 1   # stopped by --time-limit, which logs where it stopped
    assert sorted(p.name for p in packs.iterdir()) == ["dg-chat.tar.gz", "llada2-curriculum.tar.gz", "summary.json"]

    home = tmp_path / "home"
    assert gpu_run.main(["unpack", str(packs), "--runs", str(home)]) == 0
    for name, family in (("dg-chat", "diffusion_gemma"), ("llada2-curriculum", "llada2_moe")):
        assert (home / name / "log.jsonl").exists()
        assert not (home / name / "state.pt").exists()
        model = engine.load(str(home / name / "model"))
        assert model.family == family
    # The fine-tune began from the bundled 8-bit demo (dequantized without MLX) and barely moved in its steps.
    answer = list(engine.generate(engine.load(str(home / "dg-chat" / "model")),
                                  messages=[{"role": "user", "content": "hi"}],
                                  settings=engine.Settings(temp=0.0, max_tokens=48)))[-1].content
    assert "demo" in answer


def test_a_lease_where_every_run_fails_ends_at_once_and_says_why(tmp_path):
    began = time.monotonic()
    failing = tmp_path / "fails.sh"   # stands in for a python that cannot train here, whatever it is asked
    failing.write_text("#!/bin/sh\necho 'no CUDA here' >&2\nexit 1\n")
    failing.chmod(0o755)
    command = [sys.executable, "-m", "scripts.demo.gpu_run", "train", "--seconds", "600", "--quiet",
               "--python", str(failing), "--out", str(tmp_path / "packs"), "--runs", str(tmp_path / "runs")]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert time.monotonic() - began < 60   # not the 600 s it was given
    assert result.stdout.count("failed (exit 1): no CUDA here") == len(gpu_run.RUNS)
    summary = json.loads((tmp_path / "packs" / "summary.json").read_text())
    assert all(run["exit"] == 1 and not run["packed"] and run["error"] == "no CUDA here"
               for run in summary["runs"].values())


def test_a_run_that_ignores_its_stop_is_killed_and_reported(tmp_path, monkeypatch, capsys):
    stuck = tmp_path / "stuck.sh"   # a trainer that neither ends by the clock nor on TERM
    stuck.write_text("#!/bin/sh\ntrap '' TERM\necho 'still busy' >&2\nexec sleep 120\n")
    stuck.chmod(0o755)
    monkeypatch.setattr(gpu_run, "KILL_AFTER_S", 1)
    began = time.monotonic()
    code = gpu_run.main(["train", "--seconds", "1", "--grace", "1", "--quiet", "--only", "llada2-chat",
                         "--python", str(stuck), "--out", str(tmp_path / "packs"), "--runs", str(tmp_path / "runs")])
    assert code == 1 and time.monotonic() - began < 30
    run = json.loads((tmp_path / "packs" / "summary.json").read_text())["runs"]["llada2-chat"]
    assert run["exit"] == -9 and run["error"] == "still busy" and not run["packed"]


def test_a_pack_too_big_to_come_back_is_dropped_and_said(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "model.safetensors").write_bytes(os.urandom(4096))
    (folder / "log.jsonl").write_text('{"step": 1, "loss": 1.0}\n')
    assert gpu_run.pack(folder, tmp_path / "a.tar.gz")["packed"]
    monkeypatch.setattr(gpu_run, "PACK_LIMIT", 1024)
    assert gpu_run.pack(folder, tmp_path / "b.tar.gz") == {"packed": False, "bytes": pytest.approx(4096, rel=0.2)}
    assert not (tmp_path / "b.tar.gz").exists()
    assert gpu_run.pack(tmp_path / "no-model-here", tmp_path / "c.tar.gz") == {"packed": False, "bytes": 0}


def test_unpack_refuses_a_pack_that_writes_outside_its_folder(tmp_path, capsys):
    packs = tmp_path / "packs"
    packs.mkdir()
    with tarfile.open(packs / "evil.tar.gz", "w:gz") as tar:
        payload = tmp_path / "payload"
        payload.write_text("x")
        tar.add(payload, arcname="../../outside.txt")
    assert gpu_run.main(["unpack", str(packs), "--runs", str(tmp_path / "runs")]) == 1
    assert "cannot unpack" in capsys.readouterr().err
    assert not (tmp_path / "outside.txt").exists()


def test_only_names_known_runs():
    with pytest.raises(SystemExit):
        gpu_run.parse_args(["train", "--out", "x", "--only", "dg-chat,nonsense"])
    assert gpu_run.parse_args(["train", "--out", "x", "--only", "dg-chat"]).only == ["dg-chat"]


def test_the_learning_rate_cools_by_the_clock_when_it_runs_out_before_the_steps():
    args = Namespace(lr=1e-3, min_lr=1e-5, warmup=10, steps=1_000_000, time_limit=100.0)
    assert learning_rate(5, args, 0.0) == pytest.approx(1e-3 * 6 / 10)          # warm-up is by steps
    assert learning_rate(10, args, 0.0) == pytest.approx(1e-3)
    assert learning_rate(20, args, 50.0) == pytest.approx((1e-3 + 1e-5) / 2)     # half the time: half-way down
    assert learning_rate(20, args, 100.0) == pytest.approx(1e-5)
    assert learning_rate(20, args, 500.0) == pytest.approx(1e-5)
    no_clock = Namespace(**{**vars(args), "time_limit": 0.0})
    assert learning_rate(20, no_clock, 100.0) == pytest.approx(1e-3, rel=1e-3)  # the clock counts only with a limit
    steps_first = Namespace(**{**vars(args), "steps": 110})
    assert learning_rate(60, steps_first, 1.0) == pytest.approx((1e-3 + 1e-5) / 2)  # steps further along: steps
