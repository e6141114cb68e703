"""What serving costs (not a test). Prints one JSON object.

The same generation (fixed steps per block, full canvases) runs in this process (`engine.generate`) and through
`diffusion-chat serve` started as a subprocess on 127.0.0.1 (streamed over HTTP, with and without live frames),
alternated `--reps` times after one warm-up each. Reported, as medians:

* `ms_per_step`: the engine's own denoising time per step (its `Stats`; from the server's `diffusion_stats`),
  and `engine_overhead_percent` — what the server's threads (HTTP, frame encoding) take from the engine;
* `wall_ms_per_step`: from the request to the last chunk, per step, and `overhead_percent` against the
  in-process wall time (goal: under 3 %);
* `first_frame_ms`: from sending the request to the first `diffusion_frame` chunk, vs the first `Step` event
  in process (prefill plus one step, plus the HTTP round trip).

By default the checkpoint is a random DiffusionGemma written to a temp folder (bench_ui.py's size: tens of
milliseconds a step on a laptop CPU); `--model` uses another.

Usage: python bench/bench_serve.py [--model PATH] [--steps 24] [--blocks 2] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

import engine  # noqa: E402
from engine.events import Step  # noqa: E402

MESSAGES = [{"role": "user", "content": "Tell me about block diffusion."}]


def fixed_settings(steps: int, tokens: int) -> dict:
    """Every block runs all its steps: no early stop (never confident), full canvases."""
    return dict(max_tokens=tokens, max_denoising_steps=steps, diffusion_full_canvas=True, stability_threshold=0,
                confidence_threshold=1e-9)


def run_local(model, settings: dict) -> dict:
    began = time.perf_counter()
    first_step = None
    for event in engine.generate(model, messages=MESSAGES, settings=engine.Settings(**settings)):
        if first_step is None and isinstance(event, Step):
            first_step = time.perf_counter() - began
    wall = time.perf_counter() - began
    stats = event.stats
    steps = sum(stats.steps_per_block)
    return {"ms_per_step": 1000 * stats.denoise_s / steps, "wall_ms_per_step": 1000 * wall / steps,
            "first_frame_ms": 1000 * first_step, "steps": steps}


def run_served(url: str, settings: dict, frames: bool, expected_steps: int) -> dict:
    """Without frames the server sends no extensions (no stats either): the steps are the fixed count."""
    body = {"messages": MESSAGES, "stream": True, "diffusion_frames": frames, **settings}
    began = time.perf_counter()
    first_frame = None
    stats = None
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=600) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: {"):
                continue
            if first_frame is None and '"diffusion_frame"' in line:
                first_frame = time.perf_counter() - began
            if '"diffusion_stats"' in line:
                stats = json.loads(line[len("data: "):])["diffusion_stats"]
    wall = time.perf_counter() - began
    steps = sum(stats["steps_per_block"]) if stats else expected_steps
    return {"ms_per_step": 1000 * stats["denoise_s"] / steps if stats else None,
            "wall_ms_per_step": 1000 * wall / steps,
            "first_frame_ms": None if first_frame is None else 1000 * first_frame, "steps": steps}


def start_server(model: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "tui.cli", "serve", "--model", str(model), "--port", "0"],
                               cwd=REPO, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/v1", line)
        if found:
            return process, found.group(1)
        if not line and process.poll() is not None:
            break
    process.kill()
    raise SystemExit("bench_serve: the server did not start")


def median(runs: list[dict], key: str) -> float | None:
    values = [run[key] for run in runs if run[key] is not None]
    return round(statistics.median(values), 3) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="checkpoint folder (default: a random small DiffusionGemma)")
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        path = args.model
        if path is None:
            sys.path.insert(0, str(REPO / "bench"))
            from bench_ui import SMALL_SIZE
            from random_checkpoint import write_random_dg_checkpoint

            path = write_random_dg_checkpoint(Path(scratch) / "small-dg", **SMALL_SIZE)
        model = engine.load(path)
        settings = fixed_settings(args.steps, model.network.canvas_length * args.blocks)
        server, url = start_server(path)
        try:
            runs: dict[str, list[dict]] = {"local": [], "served_frames": [], "served_plain": []}
            for rep in range(args.reps + 1):  # the first round warms up every path
                local = run_local(model, settings)
                results = {"local": local, "served_frames": run_served(url, settings, True, local["steps"]),
                           "served_plain": run_served(url, settings, False, local["steps"])}
                if rep:
                    for name, result in results.items():
                        runs[name].append(result)
        finally:
            server.terminate()
            server.wait(10)

    summary = {name: {key: median(results, key) for key in ("ms_per_step", "wall_ms_per_step", "first_frame_ms")}
               for name, results in runs.items()}
    local = summary["local"]
    for name in ("served_frames", "served_plain"):
        served = summary[name]
        if served["ms_per_step"] is not None:
            served["engine_overhead_percent"] = round(100 * (served["ms_per_step"] / local["ms_per_step"] - 1), 2)
        served["overhead_percent"] = round(100 * (served["wall_ms_per_step"] / local["wall_ms_per_step"] - 1), 2)
    print(json.dumps({
        "checkpoint": str(args.model or "random small DiffusionGemma (bench_ui.py's SMALL_SIZE)"),
        "steps_per_block": args.steps, "blocks": args.blocks, "reps": args.reps,
        "steps_per_run": runs["local"][0]["steps"],
        "machine": f"{platform.system()} {platform.machine()}",
        **summary,
    }, indent=2))


if __name__ == "__main__":
    main()
