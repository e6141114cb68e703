"""Long-prompt encoding benchmark (not a test). Prints one JSON object.

Times the prefill (the encoder pass over the prompt, `network.prefill`) of 8k / 32k (and with --tokens, 128k)
token prompts: tokens/s, peak memory (`mx.get_peak_memory()` after `mx.reset_peak_memory()`) and the cost of
each pass against what was cached before it (`passes`: a linear fit seconds = a + b * cached, its R^2, and a
quadratic term's share of the last pass: near 0 when attention per pass grows linearly with the cache), on
  * the tiny DiffusionGemma and LLaDA-2 test fixtures, and
  * the mid-size random DiffusionGemma of `bench/random_checkpoint.py` (hidden 512, 8 layers, 8 heads, 32
    experts), for the lengths given by --mid-size-tokens (default 1k and 8k: 32k takes minutes on 2 cores),
    unless --skip-mid-size.

With --mlx-vlm-python PYTHON (an interpreter that has mlx-vlm) the DiffusionGemma fixture's prefill is also
timed in mlx-vlm (bench/mlx_vlm_prefill.py, its own loader and `diffusion_prefill_cache`) at the same lengths.

With --compare-one-pass the fixtures are also encoded in a single pass over the whole prompt (the encoder
before chunking) at the lengths given by --one-pass-tokens, to show what chunking saves.

Usage: python bench/bench_prefill.py [--tokens 8192 32768 131072] [--mid-size-tokens 1024 8192]
       [--skip-mid-size] [--compare-one-pass] [--one-pass-tokens 1024 8192]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402

engine.prepare_process()  # first: it loads OpenBLAS before MLX on Linux
import mlx.core as mx  # noqa: E402
import numpy as np  # noqa: E402
from engine.cpu import blas as _blas  # noqa: E402
from engine.models import chunking  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "checkpoints"


def measure(model, tokens: int, one_pass: bool = False) -> dict:
    ids = mx.array(np.random.default_rng(0).integers(3, 480, (1, tokens)), dtype=mx.int32)
    mx.eval(ids)
    limits = chunking.MIN_CHUNK, chunking.MAX_CHUNK
    if one_pass:
        chunking.MIN_CHUNK = chunking.MAX_CHUNK = 10**9
    try:
        mx.synchronize()
        mx.reset_peak_memory()
        marks = []
        began = time.perf_counter()
        cache = model.network.prefill(ids, progress=lambda done, total: marks.append((done, time.perf_counter())))
        mx.synchronize()
        ended = time.perf_counter()
        seconds = ended - began
    finally:
        chunking.MIN_CHUNK, chunking.MAX_CHUNK = limits
    row = {"prompt_tokens": tokens, "encoded": cache.offset, "one_pass": one_pass, "prefill_s": round(seconds, 2),
           "tokens_per_s": round(tokens / seconds, 1), "peak_memory_mib": round(mx.get_peak_memory() / 2**20, 1),
           "passes": pass_costs([(0, began), *marks, (tokens, ended)])}
    del cache
    mx.clear_cache()
    return row


def pass_costs(marks: list[tuple[int, float]]) -> dict:
    """Each pass's seconds against the tokens cached before it (the first pass is left out: it also warms the
    allocator), fitted linearly; with a quadratic fit, what share of the last pass its square term makes."""
    cached = np.array([done for done, _ in marks[:-1]], float)[1:]
    cost = np.diff([t for _, t in marks])[1:]
    if len(cost) < 3:
        return {"count": len(cost) + 1}
    slope, intercept = np.polyfit(cached, cost, 1)
    predicted = intercept + slope * cached
    r2 = 1 - np.sum((cost - predicted) ** 2) / max(np.sum((cost - cost.mean()) ** 2), 1e-30)
    square, *_ = np.polyfit(cached, cost, 2)
    last = cost[-1]
    return {"count": len(cost) + 1, "first_s": round(float(cost[0]), 4), "last_s": round(float(last), 4),
            "linear_intercept_s": round(float(intercept), 5), "linear_s_per_1k_cached": round(float(slope) * 1e3, 6),
            "linear_r2": round(float(r2), 4),
            "quadratic_share_of_last": round(float(square * cached[-1] ** 2 / last), 4)}


def bench(path: Path, label: str, lengths, one_pass_lengths=()) -> dict:
    model = engine.load(path)
    context = model.info().context_length
    measure(model, 256)  # warm-up (allocator, compiled kernels)
    # A prompt past the checkpoint's context is refused by generate(); timing its encoder would mean nothing.
    rows = [measure(model, n) if n <= context else {"prompt_tokens": n, "skipped": f"past the context ({context})"}
            for n in lengths]
    rows += [measure(model, n, one_pass=True) for n in one_pass_lengths]
    return {"checkpoint": label, "family": model.family, "context_length": context, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, nargs="+", default=[8192, 32768])
    parser.add_argument("--mid-size-tokens", type=int, nargs="+", default=[1024, 8192])
    parser.add_argument("--skip-mid-size", action="store_true")
    parser.add_argument("--compare-one-pass", action="store_true")
    parser.add_argument("--mlx-vlm-python", help="an interpreter with mlx-vlm installed: compare its prefill")
    parser.add_argument("--one-pass-tokens", type=int, nargs="+", default=[1024, 8192])
    args = parser.parse_args()

    one_pass = args.one_pass_tokens if args.compare_one_pass else ()
    results = [bench(FIXTURES / "dg_text", "dg_text (tiny fixture)", args.tokens, one_pass),
               bench(FIXTURES / "llada2", "llada2 (tiny fixture)", args.tokens, one_pass)]
    if not args.skip_mid_size:
        from random_checkpoint import write_random_dg_checkpoint

        with tempfile.TemporaryDirectory() as folder:
            write_random_dg_checkpoint(Path(folder))
            results.append(bench(Path(folder), "mid-size random DiffusionGemma", args.mid_size_tokens))
    if args.mlx_vlm_python:
        import subprocess

        command = [args.mlx_vlm_python, str(ROOT / "bench" / "mlx_vlm_prefill.py"), str(FIXTURES / "dg_text"),
                   "--tokens", *map(str, args.tokens)]
        done = subprocess.run(command, capture_output=True, text=True)
        results.append({"checkpoint": "dg_text (tiny fixture), mlx-vlm",
                        **(json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr[-500:]})})
    print(json.dumps({
        "machine": {"platform": platform.platform(), "mlx": mx.__version__, "device": str(mx.default_device()),
                    "blas": _blas.describe()},
        "chunking": {"min_chunk": chunking.MIN_CHUNK, "max_chunk": chunking.MAX_CHUNK,
                     "score_elements": chunking.SCORE_ELEMENTS},
        "results": results,
    }, indent=2))


if __name__ == "__main__":
    main()
