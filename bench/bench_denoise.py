"""Denoising throughput benchmark (not a test). Prints one JSON object.

Measures, per checkpoint: prefill time, ms per denoising step (decoder pass + sampler bookkeeping, from a
real `engine.generate` run with a fixed number of steps) and work tokens/s (canvas positions processed
per second), on
  * the checkpoints given with --model (default: the tiny test fixture), and
  * a mid-size random DiffusionGemma checkpoint it writes to a temp folder (hidden 512, 8 layers,
    32 experts, vocab 32k, canvas 256), unless --skip-mid-size.

With --compare-blas it also times the mid-size checkpoint in a child process without OpenBLAS (MLX's
bundled reference BLAS and its gather_mm experts), so the speed-up is measured within one run.

Usage: python bench/bench_denoise.py [--model PATH ...] [--steps 8] [--blocks 2] [--compare-blas]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402  (first: it loads OpenBLAS before MLX on Linux)
import mlx.core as mx  # noqa: E402
from engine import _blas  # noqa: E402
from engine.events import Finished  # noqa: E402

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "checkpoints" / "dg_text"


def measure(path: str, steps: int, blocks: int, prompt_tokens: int) -> dict:
    began = time.perf_counter()
    model = engine.load(path)
    load_s = time.perf_counter() - began
    prompt = [int(i) % 400 + 100 for i in range(prompt_tokens)]
    canvas = model.network.canvas_length if hasattr(model.network, "canvas_length") else 32
    settings = engine.Settings(max_tokens=canvas * blocks, max_denoising_steps=steps, diffusion_full_canvas=True,
                               stability_threshold=0, confidence_threshold=1e-9)
    # One warm-up generation (compilation, allocator), then the measured one.
    list(engine.generate(model, prompt_ids=prompt, settings=settings.replace(max_tokens=canvas)))
    mx.reset_peak_memory()
    finished = [e for e in engine.generate(model, prompt_ids=prompt, settings=settings) if isinstance(e, Finished)][0]
    stats = finished.stats
    total_steps = sum(stats.steps_per_block)
    return {
        "model": str(path),
        "family": model.family,
        "canvas_length": canvas,
        "load_s": round(load_s, 3),
        "prompt_tokens": prompt_tokens,
        "prefill_ms": round(stats.prefill_s * 1000, 2),
        "steps": total_steps,
        "ms_per_step": round(stats.ms_per_step, 2),
        "work_tokens_per_s": round(stats.work_tokens / stats.denoise_s, 1) if stats.denoise_s else None,
        "peak_memory_mib": round(stats.peak_memory_bytes / 2**20, 1),
    }


def measure_in_child(folder: str, args, env: dict) -> dict:
    command = [sys.executable, __file__, "--measure-only", folder, "--steps", str(args.steps),
               "--blocks", str(args.blocks), "--prompt-tokens", str(args.prompt_tokens)]
    output = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, check=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", help="checkpoint folder (repeatable)")
    parser.add_argument("--steps", type=int, default=8, help="denoising steps per block")
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--skip-mid-size", action="store_true")
    parser.add_argument("--compare-blas", action="store_true", help="also time the mid-size model without OpenBLAS")
    parser.add_argument("--measure-only", help=argparse.SUPPRESS)  # child process: one checkpoint, JSON out
    args = parser.parse_args()
    if args.measure_only:
        print(json.dumps(measure(args.measure_only, args.steps, args.blocks, args.prompt_tokens)))
        return
    results = [measure(m, args.steps, args.blocks, args.prompt_tokens) for m in (args.model or [str(FIXTURE)])]
    comparison = None
    if not args.skip_mid_size:
        from random_checkpoint import write_random_dg_checkpoint

        with tempfile.TemporaryDirectory() as folder:
            write_random_dg_checkpoint(Path(folder))
            entry = measure(folder, args.steps, args.blocks, args.prompt_tokens)
            entry["model"] = "random mid-size (hidden 512, 8 layers, 32 experts top-4, vocab 32768, canvas 256)"
            results.append(entry)
            if args.compare_blas:
                plain = measure_in_child(folder, args, {"DIFFUSION_CHAT_NO_OPENBLAS": "1"})
                comparison = {
                    "reference_blas_ms_per_step": plain["ms_per_step"],
                    "this_run_ms_per_step": entry["ms_per_step"],
                    "speedup": round(plain["ms_per_step"] / entry["ms_per_step"], 2),
                }
    print(json.dumps({
        "benchmark": "denoise",
        "blas_comparison": comparison,
        "device": str(mx.default_device()),
        "mlx": mx.__version__,
        "machine": platform.machine(),
        "blas": _blas.describe(),
        "results": results,
    }, indent=2))


if __name__ == "__main__":
    main()
