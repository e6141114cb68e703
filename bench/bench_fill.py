"""What a fill with many holes costs, and where: N one-token holes (`w0 ___{1} w1 ___{1} ...`) on the tiny
DiffusionGemma fixture, one denoising step per block; prints JSON.

For each N: the whole generation's wall time, the time in the model's denoising (its own Stats), and
`fill_s`, the time in the template's own code (tokenizing it, cutting blocks, emitting ids, assembling the
text and the fillings' spans: the methods of engine.generation.fill / engine.generation.fill_run, timed by wrapping
them), which must grow linearly with N. Before the run-by-run text assembly the fill code was quadratic:
every block decoded every hole's prefix again (1,000 holes: 24 of 28 s). The rest of the wall time is the
model committing each block into its cache, which grows with the context like any long answer.

    python bench/bench_fill.py [--holes 250 500 1000 2000]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import engine  # noqa: E402
from engine.generation import api  # noqa: E402
from engine.events import Finished  # noqa: E402
from engine.generation import fill_run  # noqa: E402

SPENT = {"fill_s": 0.0}


def timed(function):
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT["fill_s"] += time.perf_counter() - began
    return wrapper


for owner, name in ((fill_run.FillRun, "block"), (fill_run.FillRun, "emit"), (fill_run.FillRun, "spans"),
                    (fill_run.FillRun, "__init__"), (fill_run.FillText, "feed"), (fill_run.FillText, "finish")):
    setattr(owner, name, timed(getattr(owner, name)))
api.tokenize = timed(api.tokenize)
api.as_template = timed(api.as_template)


def run(model, holes: int) -> dict:
    template = "".join(f"w{i} ___{{1}} " for i in range(holes))
    SPENT["fill_s"] = 0.0
    began = time.perf_counter()
    finished = [e for e in engine.generate(model, messages=[{"role": "user", "content": "x"}], fill=template,
                                           settings=engine.Settings(max_denoising_steps=1, seed=0))
                if isinstance(e, Finished)][-1]
    total = time.perf_counter() - began
    assert len(finished.filled_spans) == holes
    return {"holes": holes, "blocks": len(finished.stats.steps_per_block), "total_s": round(total, 3),
            "denoise_s": round(finished.stats.denoise_s, 3), "fill_s": round(SPENT["fill_s"], 4),
            "fill_ms_per_hole": round(1000 * SPENT["fill_s"] / holes, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    args = parser.parse_args()
    model = engine.load(ROOT / "tests" / "fixtures" / "checkpoints" / "dg_text")
    run(model, 10)   # warm-up (compilation)
    rows = [run(model, n) for n in args.holes]
    print(json.dumps({"bench": "fill_holes", "machine": "shared 2-core CPU (noisy)", "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
