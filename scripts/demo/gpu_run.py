"""One GPU lease's demo training, and bringing its results home.

    python3 -m scripts.demo.gpu_run train --out PACKS [--seconds 420]     (on the GPU machine: PyTorch only)
    .venv/bin/python -m scripts.demo.gpu_run unpack PACKS --runs runs/gpu  (here: the app's environment)

`train` starts the four runs of RUNS at once on one device, each its own trainer process with batches made by
its own workers (a demo-sized network leaves most of a GPU idle, so four share it well), and stops them all
after --seconds (the trainer's --time-limit: each saves, exports and ends with its learning rate cooled). A run
that fails is reported the moment it ends, with the last line it wrote; when every run has failed, `train`
returns at once instead of holding the machine. Then each run's exported checkpoint, training log and output
are packed into PACKS/NAME.tar.gz, with PACKS/summary.json (steps, last loss, exit code of each): a handful of
files, each well under the 16 MiB a device call brings back. The optimizer state (3x the weights) stays behind.

`unpack` turns those packs into run folders (RUNS/NAME/model, log.jsonl) that scripts/demo/bundle.py and
bench/eval_demo.py take as they take a CPU run's; scripts/demo/train_gpu.sh runs both halves.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACK_LIMIT = 16 * 1024 * 1024   # what one file brought back from a device call may weigh
WATCH_EVERY_S = 30
KILL_AFTER_S = 30          # a run that has not ended this long after TERM is killed


@dataclass(frozen=True)
class Run:
    name: str
    family: str
    args: tuple[str, ...]


# The curriculum runs (every task, from scratch, column-by-column worked arithmetic in DiffusionGemma's
# thought channel) and, beside them, the CPU passes' small-talk fine-tune of each bundled demo (bench/README.md,
# "Eighth pass") with the steps a CPU could not give it.
CHAT_FINE_TUNE = ("--focus", "chat", "--composed-chat", "0.8", "--fully-noised", "0.4", "--lr", "1e-4",
                  "--min-lr", "1e-5", "--warmup", "50")
RUNS = (
    Run("dg-curriculum", "diffusion_gemma", ("--warmup", "200")),
    Run("llada2-curriculum", "llada2_moe", ("--size", "deep", "--warmup", "200")),
    Run("dg-chat", "diffusion_gemma", ("--init-from", "tui/demo/diffusion-gemma-demo", "--think-probability", "0.4",
                                       *CHAT_FINE_TUNE)),
    Run("llada2-chat", "llada2_moe", ("--init-from", "tui/demo/llada2-demo", "--size", "deep", "--decision-weight",
                                      "4", *CHAT_FINE_TUNE)),
)


def trainer_command(run: Run, folder: Path, python: str, device: str, seconds: float, workers: int,
                    token_budget: int) -> list[str]:
    """The trainer's command line for `run`: a schedule long enough that the clock, not the step count, ends it."""
    return [python, "-m", "scripts.demo.train", "--family", run.family, "--out", str(folder), "--device", device,
            "--workers", str(workers), "--token-budget", str(token_budget), "--steps", "1000000",
            "--time-limit", str(seconds), "--eval-every", "0", "--checkpoint-every", "1000", "--log-every", "50",
            *run.args]


def last_json(path: Path, key: str) -> dict | None:
    """The last JSON line of a trainer's output or log that has `key`."""
    if not path.exists():
        return None
    for line in reversed(path.read_text(encoding="utf-8", errors="replace").splitlines()):
        if line.startswith("{") and key in line:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if key in record:
                return record
    return None


def last_line(path: Path) -> str:
    lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines() if path.exists() else []
    return lines[-1] if lines else "(no output)"


def train(args) -> int:
    args.runs.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    chosen = [run for run in RUNS if not args.only or run.name in args.only]
    processes = {run.name: launch(run, args) for run in chosen}
    watch(processes, args, began)
    summary = {"seconds": round(time.monotonic() - began),
               "runs": {run.name: summarise(args.runs / run.name, processes[run.name].returncode,
                                            args.out / f"{run.name}.tar.gz") for run in chosen}}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1), flush=True)
    return 0 if any(r["exit"] == 0 for r in summary["runs"].values()) else 1


def launch(run: Run, args) -> subprocess.Popen:
    folder = args.runs / run.name
    folder.mkdir(parents=True, exist_ok=True)
    command = trainer_command(run, folder, args.python, args.device, args.seconds, args.workers, args.token_budget)
    with open(folder / "train.out", "w") as stdout, open(folder / "train.err", "w") as stderr:
        return subprocess.Popen(command, cwd=REPO, stdout=stdout, stderr=stderr)


def watch(processes: dict[str, subprocess.Popen], args, began: float) -> None:
    """Until every run has ended or the deadline: a failure said the moment it happens, progress every
    WATCH_EVERY_S; then the stragglers are stopped (a trainer saves on TERM) and, failing that, killed."""
    # The trainers stop themselves at --seconds; the margin covers start-up, the export and stragglers.
    deadline = began + args.seconds + args.grace
    reported: set[str] = set()
    next_report = began + WATCH_EVERY_S
    while True:
        for name, process in processes.items():
            if process.poll() not in (None, 0) and name not in reported:
                reported.add(name)
                print(f"{name}: failed (exit {process.returncode}): {last_line(args.runs / name / 'train.err')}",
                      flush=True)
        running = [name for name, process in processes.items() if process.poll() is None]
        if not running or time.monotonic() > deadline:
            break
        if not args.quiet and time.monotonic() >= next_report:
            next_report += WATCH_EVERY_S
            for name in running:
                print(f"{name}: {last_json(args.runs / name / 'train.out', 'step') or 'starting'}", flush=True)
        time.sleep(0.5)
    for name in running:
        processes[name].terminate()
    for process in processes.values():
        try:
            process.wait(timeout=KILL_AFTER_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def summarise(folder: Path, code: int, archive: Path) -> dict:
    stopped = last_json(folder / "log.jsonl", "stopped_at")
    return {"exit": code, "steps": stopped and stopped["stopped_at"],
            "max_memory_mib": stopped and stopped.get("max_memory_mib"),
            "last_logged": last_json(folder / "log.jsonl", "loss"), **pack(folder, archive),
            "error": None if code == 0 else last_line(folder / "train.err")}


PACKED = ("model", "log.jsonl", "train.out", "train.err")


def pack(folder: Path, archive: Path) -> dict:
    """folder's exported model and logs into one gzipped tar (not state.pt); {"packed": bool, "bytes": n}."""
    present = [name for name in PACKED if (folder / name).exists()]
    if "model" not in present:
        return {"packed": False, "bytes": 0}
    with tarfile.open(archive, "w:gz") as tar:
        for name in present:
            tar.add(folder / name, arcname=name)
    size = archive.stat().st_size
    if size > PACK_LIMIT:   # would not come back from the device: say so rather than lose it silently
        archive.unlink()
        return {"packed": False, "bytes": size}
    return {"packed": True, "bytes": size}


def unpack(args) -> int:
    packs = sorted(args.packs.glob("*.tar.gz"))
    if not packs:
        print(f"no *.tar.gz packs in {args.packs}", file=sys.stderr)
        return 1
    for archive in packs:
        folder = args.runs / archive.name.removesuffix(".tar.gz")
        folder.mkdir(parents=True, exist_ok=True)
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(folder, filter="data")   # no absolute paths, links out or devices
        except (tarfile.TarError, OSError) as exc:
            print(f"{archive}: cannot unpack ({exc})", file=sys.stderr)
            return 1
        print(folder, flush=True)
    return 0


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    t = verbs.add_parser("train", help="train the runs at once, then pack them (on the GPU machine)")
    t.add_argument("--out", type=Path, required=True, help="where the packs and summary.json go (the device's $OUT)")
    t.add_argument("--runs", type=Path, default=Path("runs/gpu"), help="run folders (default: runs/gpu)")
    t.add_argument("--seconds", type=float, default=420.0, help="training time of every run (default: 420)")
    t.add_argument("--grace", type=float, default=60.0, help="seconds past --seconds before a run is stopped")
    t.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    t.add_argument("--workers", type=int, default=3, help="batch-making processes per run (default: 3)")
    t.add_argument("--token-budget", type=int, default=32768, help="padded tokens a batch, per run (default: "
                   "32768; four runs share the GPU, so not the trainer's own sizing from free memory)")
    t.add_argument("--python", default=sys.executable, help="the trainer's interpreter (default: this one)")
    t.add_argument("--only", type=lambda text: text.split(","), default=[], metavar="NAME,...",
                   help="these runs alone (of " + ", ".join(run.name for run in RUNS) + ")")
    t.add_argument("--quiet", action="store_true", help="no progress lines while training")
    u = verbs.add_parser("unpack", help="turn the packs into run folders (here)")
    u.add_argument("packs", type=Path)
    u.add_argument("--runs", type=Path, default=Path("runs/gpu"))
    args = parser.parse_args(argv)
    if args.verb == "train" and args.seconds <= 0:
        parser.error("--seconds must be above 0")
    unknown = sorted(set(getattr(args, "only", [])) - {run.name for run in RUNS})
    if unknown:
        parser.error(f"--only: no run named {unknown[0]} (runs: {', '.join(run.name for run in RUNS)})")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    return train(args) if args.verb == "train" else unpack(args)


if __name__ == "__main__":
    sys.exit(main())
