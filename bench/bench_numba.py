"""Is Numba worth a default dependency on Linux CPUs? One process, one mid-size DiffusionGemma step (hidden 512,
8 layers, 32 experts top-4, vocab 32768, canvas 256; bench/random_checkpoint.py), timed with the host path's
Numba kernels and with NumPy's functions in their place (what an install without Numba runs), alternating.

    python bench/bench_numba.py [--rounds 6] [--steps 8] [--real-vocab]

--real-vocab times the real vocabulary instead (262,144 ids, hidden 256, 4 layers, 8 experts top-2: the
sampler's vocabulary-wide exp is where the kernels matter most). The JSON says whether the CPU has AVX-512,
since NumPy's own float32 exp / tanh are vectorised only there.

Prints one JSON object: each round's ms per step both ways, the medians and their ratio. Needs Numba installed
(the `cpu` extra); without it there is nothing to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import engine  # noqa: E402

engine.prepare_process()  # first: it loads OpenBLAS before MLX on Linux
import mlx.core as mx  # noqa: E402
from engine.cpu import blas, kernels  # noqa: E402
from cpu_flags import cpu_has  # noqa: E402
from engine.events import Finished  # noqa: E402
from random_checkpoint import REAL_VOCAB, REAL_VOCAB_NAME, write_random_dg_checkpoint  # noqa: E402


def ms_per_step(model, settings, prompt: list[int]) -> float:
    finished = [e for e in engine.generate(model, prompt_ids=prompt, settings=settings) if isinstance(e, Finished)]
    return finished[0].stats.ms_per_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=8, help="denoising steps per block (one block per run)")
    parser.add_argument("--real-vocab", action="store_true", help="the real-vocabulary checkpoint, not the mid one")
    args = parser.parse_args()
    if not kernels.available():
        raise SystemExit("Numba is not installed: nothing to compare (pip install '.[cpu]')")
    numba = kernels.numba
    with tempfile.TemporaryDirectory() as scratch:
        shape = REAL_VOCAB if args.real_vocab else {}
        model = engine.load(str(write_random_dg_checkpoint(Path(scratch) / "mid", **shape)))
        canvas = model.network.canvas_length
        settings = engine.Settings(max_tokens=canvas, max_denoising_steps=args.steps, diffusion_full_canvas=True,
                                   stability_threshold=0, confidence_threshold=1e-9, temp=1.0)
        prompt = [i % 400 + 100 for i in range(120)]
        ms_per_step(model, settings, prompt)   # warm-up: compilation, allocator
        runs: dict[str, list[float]] = {"numba": [], "numpy": []}
        for round_ in range(args.rounds):
            for name in (("numba", "numpy") if round_ % 2 == 0 else ("numpy", "numba")):
                kernels.numba = numba if name == "numba" else None   # available() follows it
                try:
                    runs[name].append(round(ms_per_step(model, settings, prompt), 2))
                finally:
                    kernels.numba = numba
    medians = {name: statistics.median(times) for name, times in runs.items()}
    print(json.dumps({
        "benchmark": "numba",
        "model": (REAL_VOCAB_NAME if args.real_vocab else "random mid-size DiffusionGemma, canvas 256")
        + ", temperature 1.0",
        "device": str(mx.default_device()), "machine": platform.machine(), "cpus": os.cpu_count(),
        "avx512": cpu_has("avx512f"),
        "blas": blas.describe(), "numba": numba.__version__, "rounds": runs,
        "median_ms_per_step": medians, "numpy_over_numba": round(medians["numpy"] / medians["numba"], 3),
    }, indent=2))


if __name__ == "__main__":
    main()
