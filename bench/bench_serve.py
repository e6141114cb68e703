"""What serving costs (not a test). Prints one JSON object.

The same generation (fixed steps per block, full canvases) runs in this process (`engine.generate`) and through
`diffusion-chat serve` started as a subprocess on 127.0.0.1 (streamed over HTTP, with and without live frames),
alternated `--reps` times (the order turning) after one warm-up each. Reported, as medians (and the range of
the wall time per step, since a shared machine is noisy):

* `ms_per_step`: the engine's own denoising time per step (its `Stats`; from the server's `diffusion_stats`),
  and `engine_overhead_percent` — what the server's threads (HTTP, frame encoding) take from the engine;
* `wall_ms_per_step`: from the request to the last chunk, per step, and `overhead_percent` against the
  in-process wall time (goal: under 3 %);
* `cpu_ms_per_step`: CPU time of the whole serving process (or of this process, in process) per step, and
  `cpu_overhead_percent` — the server's extra work, less shaken than wall time by other load (Linux only);
* `frame`: what encoding one frame costs the server (ms of CPU) and its size on the wire;
* `first_frame_ms`: from sending the request to the first `diffusion_frame` chunk, vs the first `Step` event
  in process (prefill plus one step, plus the HTTP round trip).

By default the checkpoint is a random DiffusionGemma written to a temp folder (bench_ui.py's size: tens of
milliseconds a step on a laptop CPU); `--model` uses another.

Usage: python bench/bench_serve.py [--model PATH] [--steps 12] [--blocks 2] [--reps 5]
       python bench/bench_serve.py --concurrency 4 [--model PATH] [--steps 8] [--blocks 1] [--reps 3]
       (total tokens/s of concurrent streams, batched vs serialized: bench/serve_concurrency.py)
"""

from __future__ import annotations

import argparse
import json
import os
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
sys.path.insert(0, str(REPO / "bench"))

import httpx  # noqa: E402

import engine  # noqa: E402

engine.prepare_process()  # first: it loads OpenBLAS before MLX on Linux
from engine.events import Step  # noqa: E402

MESSAGES = [{"role": "user", "content": "Tell me about block diffusion."}]


def fixed_settings(steps: int, tokens: int) -> dict:
    """Every block runs all its steps: no early stop (never confident), full canvases."""
    return dict(max_tokens=tokens, max_denoising_steps=steps, diffusion_full_canvas=True, stability_threshold=0,
                confidence_threshold=1e-9)


def process_cpu_s(pid: int | None = None) -> float | None:
    """CPU seconds a process has used (this one, or a child on Linux): less shaken than wall time by the
    other work on a shared machine, and what a server's extra threads cost."""
    if pid is None:
        return time.process_time()
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_local(model, settings: dict) -> dict:
    cpu = process_cpu_s()
    began = time.perf_counter()
    first_step = None
    for event in engine.generate(model, messages=MESSAGES, settings=engine.Settings(**settings)):
        if first_step is None and isinstance(event, Step):
            first_step = time.perf_counter() - began
    wall = time.perf_counter() - began
    cpu = process_cpu_s() - cpu
    stats = event.stats
    steps = sum(stats.steps_per_block)
    return {"ms_per_step": 1000 * stats.denoise_s / steps, "wall_ms_per_step": 1000 * wall / steps,
            "cpu_ms_per_step": 1000 * cpu / steps, "first_frame_ms": 1000 * first_step, "steps": steps}


def run_served(url: str, pid: int, settings: dict, frames: bool, expected_steps: int) -> dict:
    """Without frames the server sends no extensions (no stats either): the steps are the fixed count."""
    body = {"messages": MESSAGES, "stream": True, "diffusion_frames": frames, **settings}
    cpu = process_cpu_s(pid)
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
    time.sleep(0.05)  # the server's last writes land in its CPU count
    cpu = None if cpu is None else process_cpu_s(pid) - cpu
    steps = sum(stats["steps_per_block"]) if stats else expected_steps
    return {"ms_per_step": 1000 * stats["denoise_s"] / steps if stats else None,
            "wall_ms_per_step": 1000 * wall / steps, "cpu_ms_per_step": None if cpu is None else 1000 * cpu / steps,
            "first_frame_ms": None if first_frame is None else 1000 * first_frame, "steps": steps}


def start_server(model: Path, *flags: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "tui.cli", "serve", "--model", str(model), "--port", "0",
                                *flags], cwd=REPO, stderr=subprocess.PIPE, text=True)
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


def frame_cost(model, settings: dict) -> dict:
    """What encoding one frame costs the server (CPU time on its event loop) and weighs on the wire."""
    from engine.serve import wire
    from engine.serve.chunks import Completion, sse

    step = next(e for e in engine.generate(model, messages=MESSAGES, settings=engine.Settings(**settings))
                if isinstance(e, Step))
    token_text = model.info().token_text
    completion = Completion(model.name)
    began = time.process_time()
    for _ in range(200):
        encoded = sse(completion.chunk({}, **{wire.FRAME_KEY: wire.encode_frame(step, token_text)}))
    return {"encode_ms": round(1000 * (time.process_time() - began) / 200, 3), "bytes": len(encoded),
            "positions": len(step.canvas)}


def median(runs: list[dict], key: str) -> float | None:
    values = [run[key] for run in runs if run[key] is not None]
    return round(statistics.median(values), 3) if values else None


def spread(runs: list[dict], key: str) -> list[float] | None:
    values = [run[key] for run in runs if run[key] is not None]
    return [round(min(values), 1), round(max(values), 1)] if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="checkpoint folder (default: a random small DiffusionGemma)")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=0, metavar="N",
                        help="instead: N concurrent streams, batched (--max-batch N) vs serialized (--max-batch 1), "
                             "on the mid-size checkpoint by default (bench/serve_concurrency.py)")
    parser.add_argument("--skip-logits", action="store_true",
                        help="with --concurrency: leave out the in-process logit comparison")
    args = parser.parse_args()
    if args.concurrency:
        return concurrency_main(args)

    with tempfile.TemporaryDirectory() as scratch:
        path = args.model
        if path is None:
            sys.path.insert(0, str(REPO / "bench"))
            from bench_ui import SMALL_SIZE
            from random_checkpoint import write_random_dg_checkpoint

            path = write_random_dg_checkpoint(Path(scratch) / "small-dg", **SMALL_SIZE)
        model = engine.load(path)
        settings = fixed_settings(args.steps, model.network.canvas_length * args.blocks)
        frame = frame_cost(model, settings)
        server, url = start_server(path)
        try:
            runs: dict[str, list[dict]] = {"local": [], "served_frames": [], "served_plain": []}
            steps = run_local(model, settings)["steps"]
            paths = {"local": lambda: run_local(model, settings),
                     "served_frames": lambda: run_served(url, server.pid, settings, True, steps),
                     "served_plain": lambda: run_served(url, server.pid, settings, False, steps)}
            for name in paths:  # warm-up
                paths[name]()
            for rep in range(args.reps):
                # The order turns each round, so a slow spell of a shared machine does not always hit one path.
                names = list(paths)[rep % 3:] + list(paths)[:rep % 3]
                for name in names:
                    runs[name].append(paths[name]())
        finally:
            server.terminate()
            server.wait(10)

    keys = ("ms_per_step", "wall_ms_per_step", "cpu_ms_per_step", "first_frame_ms")
    summary = {name: {**{key: median(results, key) for key in keys},
                      "wall_ms_per_step_range": spread(results, "wall_ms_per_step")}
               for name, results in runs.items()}
    local = summary["local"]
    for name in ("served_frames", "served_plain"):
        served = summary[name]
        if served["ms_per_step"] is not None:
            served["engine_overhead_percent"] = round(100 * (served["ms_per_step"] / local["ms_per_step"] - 1), 2)
        served["overhead_percent"] = round(100 * (served["wall_ms_per_step"] / local["wall_ms_per_step"] - 1), 2)
        if served["cpu_ms_per_step"] is not None:
            served["cpu_overhead_percent"] = round(100 * (served["cpu_ms_per_step"] / local["cpu_ms_per_step"] - 1), 2)
    print(json.dumps({
        "checkpoint": str(args.model or "random small DiffusionGemma (bench_ui.py's SMALL_SIZE)"),
        "steps_per_block": args.steps, "blocks": args.blocks, "reps": args.reps,
        "steps_per_run": steps,
        "frame": frame,
        "machine": f"{platform.system()} {platform.machine()}",
        **summary,
    }, indent=2))


def concurrency_main(args) -> None:
    from serve_concurrency import bodies, compare, logit_differences

    with tempfile.TemporaryDirectory() as scratch:
        path = args.model
        if path is None:
            from random_checkpoint import write_random_dg_checkpoint

            path = write_random_dg_checkpoint(Path(scratch) / "mid-dg")   # MID_SIZE, canvas 256
        model = engine.load(path)
        settings = fixed_settings(args.steps, model.network.canvas_length * args.blocks)
        logits = None if args.skip_logits else logit_differences(model, args.concurrency)
        del model
        servers = {"serialized": start_server(path, "--max-batch", "1"),
                   "batched": start_server(path, "--max-batch", str(args.concurrency))}
        try:
            result = compare({name: url for name, (_, url) in servers.items()},
                             bodies(args.concurrency, settings), args.reps,
                             {name: (lambda pid=process.pid: process_cpu_s(pid))
                              for name, (process, _) in servers.items()})
        finally:
            for process, _ in servers.values():
                process.terminate()
                process.wait(10)
    print(json.dumps({
        "checkpoint": str(args.model or "random mid-size DiffusionGemma (bench/random_checkpoint.py MID_SIZE)"),
        "concurrency": args.concurrency, "steps_per_block": args.steps, "blocks": args.blocks, "reps": args.reps,
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        **result, "logits": logits,
    }, indent=2))


if __name__ == "__main__":
    main()
