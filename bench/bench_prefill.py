"""Long-prompt encoding benchmark (not a test). Prints one JSON object.

Times the prefill (the encoder pass over the prompt, `network.prefill`) of 1k / 8k / 32k-token prompts and
records its peak memory (`mx.get_peak_memory()` after `mx.reset_peak_memory()`), on
  * the tiny DiffusionGemma and LLaDA-2 test fixtures, and
  * the mid-size random DiffusionGemma of `bench/random_checkpoint.py` (hidden 512, 8 layers, 8 heads, 32
    experts), for the lengths given by --mid-size-tokens (default 1k and 8k: 32k takes minutes on 2 cores),
    unless --skip-mid-size.

With --compare-one-pass the fixtures are also encoded in a single pass over the whole prompt (the encoder
before chunking) at the lengths given by --one-pass-tokens, to show what chunking saves.

Usage: python bench/bench_prefill.py [--tokens 1024 8192 32768] [--mid-size-tokens 1024 8192]
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
        began = time.perf_counter()
        cache = model.network.prefill(ids)
        mx.synchronize()
        seconds = time.perf_counter() - began
    finally:
        chunking.MIN_CHUNK, chunking.MAX_CHUNK = limits
    row = {"prompt_tokens": tokens, "encoded": cache.offset, "one_pass": one_pass, "prefill_s": round(seconds, 2),
           "tokens_per_s": round(tokens / seconds, 1), "peak_memory_mib": round(mx.get_peak_memory() / 2**20, 1)}
    del cache
    mx.clear_cache()
    return row


def bench(path: Path, label: str, lengths, one_pass_lengths=()) -> dict:
    model = engine.load(path)
    measure(model, 256)  # warm-up (allocator, compiled kernels)
    rows = [measure(model, n) for n in lengths] + [measure(model, n, one_pass=True) for n in one_pass_lengths]
    return {"checkpoint": label, "family": model.family, "context_length": model.info().context_length,
            "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, nargs="+", default=[1024, 8192, 32768])
    parser.add_argument("--mid-size-tokens", type=int, nargs="+", default=[1024, 8192])
    parser.add_argument("--skip-mid-size", action="store_true")
    parser.add_argument("--compare-one-pass", action="store_true")
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
    print(json.dumps({
        "machine": {"platform": platform.platform(), "mlx": mx.__version__, "device": str(mx.default_device()),
                    "blas": _blas.describe()},
        "chunking": {"min_chunk": chunking.MIN_CHUNK, "max_chunk": chunking.MAX_CHUNK,
                     "score_elements": chunking.SCORE_ELEMENTS},
        "results": results,
    }, indent=2))


if __name__ == "__main__":
    main()
