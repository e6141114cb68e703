"""Denoising throughput benchmark (not a test). Prints one JSON object.

Measures, per checkpoint: prefill time, ms per denoising step (decoder pass + sampler bookkeeping, from a
real `engine.generate` run with a fixed number of steps, entropy-bound) at temperature 1.0 and 0, the network
step alone, the sampler's share of a step (bench/step_share.py says how it is instrumented) and work tokens/s,
on
  * the checkpoints given with --model (default: the tiny test fixture),
  * a mid-size random DiffusionGemma checkpoint it writes to a temp folder (hidden 512, 8 layers,
    32 experts top-4, vocab 32k, canvas 256), unless --skip-mid-size, with its BLAS-bound limit: the step's
    matrix FLOPs (bench/step_flops.py) over the GFLOP/s of a 2048^3 float32 MLX matmul measured in this run,
  * a real-vocabulary random checkpoint (vocab 262,144, hidden 256, 4 layers, 8 experts top-2, canvas 256),
    unless --skip-real-vocab.

--compare-blas also times the mid-size checkpoint in a child process without OpenBLAS (MLX's bundled
reference BLAS and its gather_mm experts); --compare-blas-lib LIBRARY with another BLAS preloaded (pip's
mkl: libmkl_rt.so.3 exports the unprefixed cblas_sgemm MLX binds). --compare-mlx-vlm times mlx-vlm's
DiffusionGemma on the same folder (the mid-size one, or with --skip-mid-size the last --model) in a child process
(bench/mlx_vlm_step.py, run by --mlx-vlm-python, with the same BLAS preloaded): same prompt length, steps,
entropy-bound sampler, temperature 0; both numbers and the ratio come from this one run.

--path mlx switches the host path off (DIFFUSION_CHAT_HOST_OPS=0, also in child processes): the pure-MLX graph
that Metal and CUDA run, timed on this CPU. Every timed generation also reports its host synchronisations per
step (bench/host_syncs.py: mx.eval, .item(), .tolist(), NumPy conversions of MLX arrays; the most seen between
two Step events of one block) next to the ratio.

Usage: python bench/bench_denoise.py [--path host|mlx] [--model PATH ...] [--steps 8] [--blocks 2] [--prompt-tokens 120]
                                     [--compare-blas] [--compare-blas-lib LIBRARY]
                                     [--compare-mlx-vlm [--mlx-vlm-python PATH] [--alternate N]]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import engine  # noqa: E402

# first: it loads OpenBLAS before MLX on Linux (a --reference-blas child keeps MLX's bundled BLAS)
engine.prepare_process(openblas="--reference-blas" not in sys.argv)
import mlx.core as mx  # noqa: E402
from engine.cpu import blas as _blas, malloc as _malloc, switch  # noqa: E402
from engine.events import Finished, Step  # noqa: E402
from cpu_flags import cpu_has  # noqa: E402
from step_flops import mean_step_flops  # noqa: E402
from host_syncs import counting  # noqa: E402
from step_share import shares, timed_step_parts  # noqa: E402

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "checkpoints" / "dg_text"
MLX_VLM_STEP = Path(__file__).resolve().parent / "mlx_vlm_step.py"
MID_NAME = "random mid-size (hidden 512, 8 layers, 32 experts top-4, vocab 32768, canvas 256)"


def prompt_of(length: int) -> list[int]:
    return [int(i) % 400 + 100 for i in range(length)]


def timed_generation(model, prompt: list[int], settings) -> dict:
    """One instrumented `engine.generate` run: ms per step and where a step's time goes (bench/step_share.py)."""
    marks = []  # (block, syncs so far) at each Step event
    with timed_step_parts() as totals, counting() as syncs:
        for event in engine.generate(model, prompt_ids=prompt, settings=settings):
            if isinstance(event, Step):
                marks.append((event.block, syncs.count))
            elif isinstance(event, Finished):
                finished = event
    stats = finished.stats
    steps = sum(stats.steps_per_block)
    # Between two Step events of one block lies exactly one step's path (prefill and commits fall outside).
    within = [n - marks[i - 1][1] for i, (block, n) in enumerate(marks) if i and marks[i - 1][0] == block]
    return {"ms_per_step": round(stats.ms_per_step, 2), "steps": steps, "prefill_ms": round(stats.prefill_s * 1000, 2),
            "work_tokens_per_s": round(stats.work_tokens / stats.denoise_s, 1) if stats.denoise_s else None,
            "host_syncs_per_step": max(within) if within else None,
            "host_syncs_per_step_with_prefill_and_commits": round(syncs.count / steps, 2) if steps else None,
            "host_syncs_by_kind": syncs.kinds,
            **shares(totals, stats.denoise_s, steps)}


def network_step_ms(model, prompt: list[int], canvas: int, repeats: int) -> float | None:
    """The matrix part of a step alone, median ms: the soft-embedding product of the previous step's
    probabilities (softmax(z) @ E, made by the sampler) and the decoder pass it conditions."""
    network = model.network
    if not hasattr(network, "self_conditioning_from_probabilities"):
        return None
    cache = network.prefill(mx.array([prompt], dtype=mx.int32))
    ids = mx.random.randint(0, network.vocab_size, (1, canvas)).astype(mx.int32)
    probabilities = mx.softmax(network.denoise(ids, cache)[0], axis=-1)
    mx.eval(probabilities)
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        # softcap=False as a generation step calls it (the sampler fuses the softcap into its one pass).
        signal = network.self_conditioning_from_probabilities(probabilities)
        mx.eval(network.denoise(ids, cache, self_conditioning=signal, softcap=False))
        times.append(time.perf_counter() - began)
    return round(1000 * sorted(times)[len(times) // 2], 2)


def measure(path: str, steps: int, blocks: int, prompt_tokens: int) -> dict:
    began = time.perf_counter()
    model = engine.load(path)
    load_s = time.perf_counter() - began
    prompt = prompt_of(prompt_tokens)
    canvas = model.network.canvas_length if hasattr(model.network, "canvas_length") else 32
    settings = engine.Settings(max_tokens=canvas * blocks, max_denoising_steps=steps, diffusion_full_canvas=True,
                               stability_threshold=0, confidence_threshold=1e-9)
    # One warm-up generation (compilation, allocator), then the measured ones.
    list(engine.generate(model, prompt_ids=prompt, settings=settings.replace(max_tokens=canvas)))
    mx.reset_peak_memory()
    temp_1 = timed_generation(model, prompt, settings.replace(temp=1.0))
    temp_0 = timed_generation(model, prompt, settings.replace(temp=0.0))
    return {
        "model": str(path),
        "family": model.family,
        "canvas_length": canvas,
        "load_s": round(load_s, 3),
        "prompt_tokens": prompt_tokens,
        "prefill_ms": temp_1["prefill_ms"],
        "steps": temp_1["steps"],
        "ms_per_step": temp_1["ms_per_step"],  # temperature 1.0, the official default
        "temp_1": temp_1,
        "temp_0": temp_0,
        "network_only_ms_per_step": network_step_ms(model, prompt, canvas, repeats=steps),
        # The same pass with the host path off (MLX's own GELU / softmax / expert matmuls), to see in the
        # same run what the NumPy round trips buy on this machine.
        "network_only_ms_without_host_ops": _without_host_ops(lambda: network_step_ms(model, prompt, canvas, steps)),
        "peak_memory_mib": round(mx.get_peak_memory() / 2**20, 1),
    }


def _without_host_ops(work):
    with switch.disabled():
        return work()


def matmul_gflops(n: int = 2048, repeats: int = 5) -> float:
    """The best GFLOP/s of an n^3 float32 MLX matmul in this process (the BLAS that serves the network)."""
    a, b = mx.random.normal((n, n)), mx.random.normal((n, n))
    mx.eval(a, b, a @ b)
    best = min(_timed(lambda: mx.eval(a @ b)) for _ in range(repeats))
    return round(2 * n**3 / best / 1e9, 1)


def _timed(work) -> float:
    began = time.perf_counter()
    work()
    return time.perf_counter() - began


def blas_bound(folder: str, entry: dict, blocks: int, gflops: float) -> dict:
    text = json.loads((Path(folder) / "config.json").read_text())["text_config"]
    flops = mean_step_flops(text, entry["canvas_length"], entry["prompt_tokens"], blocks)
    limit_ms = flops / (gflops * 1e9) * 1000
    return {"step_gflop": round(flops / 1e9, 2), "matmul_gflops_this_run": gflops,
            "limit_ms": round(limit_ms, 1),
            "temp_1_step_over_limit": round(entry["temp_1"]["ms_per_step"] / limit_ms, 2),
            "temp_0_step_over_limit": round(entry["temp_0"]["ms_per_step"] / limit_ms, 2),
            "network_only_over_limit": round(entry["network_only_ms_per_step"] / limit_ms, 2)
            if entry["network_only_ms_per_step"] else None}


def measure_in_child(folder: str, args, env: dict, reference_blas: bool = False) -> dict:
    command = [sys.executable, __file__, "--measure-only", folder, "--path", args.path, "--steps", str(args.steps),
               "--blocks", str(args.blocks), "--prompt-tokens", str(args.prompt_tokens)]
    command += ["--reference-blas"] if reference_blas else []
    output = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, check=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def run_mlx_vlm(folder: str, args) -> dict:
    """mlx-vlm's step on the same folder, in its own interpreter, with the BLAS this process has: its JSON, or
    {"error": ...}."""
    env = dict(os.environ)
    if _blas.describe() != _blas.REFERENCE_BLAS:
        env["LD_PRELOAD"] = " ".join(filter(None, [_blas.describe(), env.get("LD_PRELOAD")]))
    command = [args.mlx_vlm_python, str(MLX_VLM_STEP), folder, "--steps", str(args.steps),
               "--prompt-tokens", str(args.prompt_tokens)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return {"error": f"mlx-vlm could not run this checkpoint: {lines[-1] if lines else 'exit ' + str(done.returncode)}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare_mlx_vlm(folder: str, entry: dict, args) -> dict:
    """Our measured entry against one mlx-vlm run on the same folder."""
    theirs = run_mlx_vlm(folder, args)
    if "error" in theirs:
        return theirs
    ours = entry["temp_0"]["ms_per_step"]
    return {
        "settings": "entropy-bound, temperature 0, full canvas, same prompt and steps, same BLAS",
        "this_engine_temp_0_ms_per_step": ours,
        "mlx_vlm_ms_per_step": theirs["ms_per_step"],
        "ratio": round(ours / theirs["ms_per_step"], 3),
        "this_engine_host_syncs_per_step": entry["temp_0"]["host_syncs_per_step"],
        "this_engine_network_only_ms": entry["network_only_ms_per_step"],
        "mlx_vlm_network_only_ms": theirs["network_ms_per_step"],
        "network_ratio": round(entry["network_only_ms_per_step"] / theirs["network_ms_per_step"], 3)
        if entry["network_only_ms_per_step"] else None,
        "mlx_vlm_run": theirs,
    }


def alternate_with_mlx_vlm(folder: str, args) -> dict:
    """`--alternate N`: N rounds, each our temp-0 step in a child process then mlx-vlm's, so both halves see the
    same machine load in turn; the ratio of the medians and each round's own ratio."""
    ours, theirs = [], []
    for _ in range(args.alternate):
        ours.append(measure_in_child(folder, args, {})["temp_0"]["ms_per_step"])
        other = run_mlx_vlm(folder, args)
        if "error" in other:
            return other
        theirs.append(other["ms_per_step"])
    median = statistics.median
    return {"rounds": args.alternate, "this_engine_temp_0_ms_per_step": ours, "mlx_vlm_ms_per_step": theirs,
            "ratio_each_round": [round(a / b, 3) for a, b in zip(ours, theirs)],
            "ratio_of_medians": round(median(ours) / median(theirs), 3)}


def default_mlx_vlm_python() -> str | None:
    return sys.executable if importlib.util.find_spec("mlx_vlm") else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", help="checkpoint folder (repeatable)")
    parser.add_argument("--steps", type=int, default=8, help="denoising steps per block")
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, default=120)
    parser.add_argument("--path", choices=("host", "mlx"), default="host",
                        help="mlx: the host path off (DIFFUSION_CHAT_HOST_OPS=0), the pure-MLX graph Metal and CUDA "
                             "run; host: the CPU host path where MLX runs on the CPU")
    parser.add_argument("--skip-mid-size", action="store_true")
    parser.add_argument("--skip-real-vocab", action="store_true")
    parser.add_argument("--compare-blas", action="store_true", help="also time the mid-size model without OpenBLAS")
    parser.add_argument("--compare-mlx-vlm", action="store_true", help="also time mlx-vlm on the same checkpoint")
    parser.add_argument("--alternate", type=int, default=0, metavar="N",
                        help="with --compare-mlx-vlm: also N alternating rounds of our step and mlx-vlm's, each "
                             "in its own process")
    parser.add_argument("--mlx-vlm-python", default=None,
                        help="interpreter of an environment with mlx-vlm (default: this one, if it has mlx-vlm)")
    parser.add_argument("--compare-blas-lib", metavar="LIBRARY",
                        help="also time the mid-size model with this BLAS library preloaded instead of OpenBLAS "
                             "(e.g. pip's mkl: .../lib/libmkl_rt.so.3), in a child process")
    parser.add_argument("--measure-only", help=argparse.SUPPRESS)  # child process: one checkpoint, JSON out
    parser.add_argument("--reference-blas", action="store_true", help=argparse.SUPPRESS)  # child: no OpenBLAS
    args = parser.parse_args()
    if args.path == "mlx":
        # the one switch, for this process and its children (read at every op, so set before any generation)
        os.environ[switch.ENV] = "0"
    if args.measure_only:
        print(json.dumps({**measure(args.measure_only, args.steps, args.blocks, args.prompt_tokens),
                          "matmul_gflops_2048": matmul_gflops(), "maps_blas": _mapped_blas_files()}))
        return
    if args.compare_mlx_vlm:
        args.mlx_vlm_python = args.mlx_vlm_python or default_mlx_vlm_python()
        if not args.mlx_vlm_python:
            parser.error(f"mlx-vlm is not importable by {sys.executable}; pass --mlx-vlm-python with the "
                         "interpreter of an environment that has it")
        if not Path(args.mlx_vlm_python).exists():
            parser.error(f"--mlx-vlm-python {args.mlx_vlm_python}: no such file")
    gflops = matmul_gflops()
    folders = list(args.model or [str(FIXTURE)])
    results = [measure(m, args.steps, args.blocks, args.prompt_tokens) for m in folders]
    blas_comparison = limit = vlm = real_vocab = None
    with tempfile.TemporaryDirectory() as scratch:
        compared = folders[-1] if folders else None
        if not args.skip_mid_size:
            from random_checkpoint import write_random_dg_checkpoint

            compared = str(write_random_dg_checkpoint(Path(scratch) / "mid"))
            entry = measure(compared, args.steps, args.blocks, args.prompt_tokens)
            entry["model"] = MID_NAME
            results.append(entry)
            limit = blas_bound(compared, entry, args.blocks, gflops)
            if args.compare_blas:
                plain = measure_in_child(compared, args, {}, reference_blas=True)
                blas_comparison = {
                    "reference_blas_ms_per_step": plain["ms_per_step"],
                    "this_run_ms_per_step": entry["ms_per_step"],
                    "speedup": round(plain["ms_per_step"] / entry["ms_per_step"], 2),
                }
            if args.compare_blas_lib:
                library = str(Path(args.compare_blas_lib).resolve())
                other = measure_in_child(compared, args, {
                    "LD_PRELOAD": library, "LD_LIBRARY_PATH": str(Path(library).parent),
                    "MKL_THREADING_LAYER": "GNU"}, reference_blas=True)
                blas_comparison = {**(blas_comparison or {}), "preloaded_library": library,
                                   "preloaded_ms_per_step": other["ms_per_step"],
                                   "preloaded_temp_0_ms_per_step": other["temp_0"]["ms_per_step"],
                                   "preloaded_matmul_gflops_2048": other["matmul_gflops_2048"],
                                   "preloaded_maps": other["maps_blas"],
                                   "this_run_ms_per_step": entry["ms_per_step"]}
        if args.compare_mlx_vlm and compared:
            vlm = compare_mlx_vlm(compared, results[-1], args)
            if args.alternate > 0 and "error" not in vlm:
                vlm["alternating"] = alternate_with_mlx_vlm(compared, args)
        if not args.skip_real_vocab:
            from random_checkpoint import REAL_VOCAB, REAL_VOCAB_NAME, write_random_dg_checkpoint

            folder = str(write_random_dg_checkpoint(Path(scratch) / "real_vocab", **REAL_VOCAB))
            real_vocab = measure(folder, args.steps, args.blocks, args.prompt_tokens)
            real_vocab["model"] = REAL_VOCAB_NAME
            real_vocab["blas_bound"] = blas_bound(folder, real_vocab, args.blocks, gflops)
    print(json.dumps({
        "benchmark": "denoise",
        "device": str(mx.default_device()),
        "path": args.path,
        "mlx": mx.__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "blas": _blas.describe(),
        # engine.cpu.malloc: large arrays kept in the heap (set by prepare_process; cached, so this only reads it)
        "malloc_tuned": _malloc.keep_large_allocations(),
        "openblas_thread_timeout": (_blas.prefer_openblas() or (None, None))[1],
        "sampler": "host" if _host_sampler() else "device",
        # engine.cpu.kernels: Numba's vectorised exp / tanh (null: NumPy's, scalar on CPUs without AVX-512)
        "host_kernels": _host_kernels(),
        "cpu_avx512": cpu_has("avx512f"),
        "matmul_gflops_2048": gflops,
        "blas_bound": limit,
        "mlx_vlm_comparison": vlm,
        "blas_comparison": blas_comparison,
        "real_vocabulary": real_vocab,
        "results": results,
    }, indent=2))
    if vlm and "ratio" in vlm:
        print(f"{args.path} path: {vlm['this_engine_temp_0_ms_per_step']} ms/step against mlx-vlm's "
              f"{vlm['mlx_vlm_ms_per_step']} (ratio {vlm['ratio']}), host syncs per step "
              f"{vlm['this_engine_host_syncs_per_step']}", file=sys.stderr)
        if "ratio_of_medians" in vlm.get("alternating", {}):
            print(f"alternating, {args.alternate} rounds: ratios {vlm['alternating']['ratio_each_round']}, "
                  f"of the medians {vlm['alternating']['ratio_of_medians']}", file=sys.stderr)


def _mapped_blas_files() -> list[str]:
    """BLAS-like libraries mapped into this process (which one MLX bound is the first that exports cblas_sgemm)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split(maxsplit=5)[5].strip() for line in maps if len(line.split(maxsplit=5)) == 6}
    except OSError:
        return []
    return sorted(p for p in paths if any(k in os.path.basename(p).lower() for k in ("blas", "mkl_rt")))


def _host_kernels() -> str | None:
    from engine.cpu import kernels

    return f"numba {kernels.numba.__version__}" if kernels.available() else None


def _host_sampler() -> bool:
    from engine.cpu import device

    return device.host_path()


if __name__ == "__main__":
    main()
