"""Seconds per answer of two or more demo checkpoints, taken in turn on each prompt of a hand-written panel.

    python bench/time_demos.py tui/demo/llada2-demo runs/w8/model [--panel 2]

Run one after the other, two checkpoints meet different load on this shared machine (the same panel took 0.61 s
and 1.46 s an answer an hour apart), so their ratio means nothing; here every prompt is answered by each model
in turn, in one process, at each checkpoint's default settings, and the ratio of the means is what to read.
Prints one JSON object: mean and worst seconds per model, and each mean over the first model's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402

engine.prepare_process()  # first: it loads OpenBLAS before MLX on Linux
from scripts.demo.panel_prompts import PANELS  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", type=Path, help="demo folders; the first is the baseline")
    parser.add_argument("--panel", default="1", choices=tuple(PANELS))
    args = parser.parse_args(argv)
    for folder in args.models:
        if not (folder / "config.json").is_file():
            parser.error(f"{folder}: no config.json there (give a demo folder)")
    models = {str(folder): engine.load(str(folder)) for folder in args.models}
    seconds: dict[str, list[float]] = {name: [] for name in models}
    for prompt in (p for prompts in PANELS[args.panel].values() for p in prompts):
        for name, model in models.items():
            began = time.perf_counter()
            for _ in engine.generate(model, messages=[{"role": "user", "content": prompt}]):
                pass
            seconds[name].append(time.perf_counter() - began)
    baseline = seconds[str(args.models[0])]
    print(json.dumps({"panel": args.panel, "answers": len(baseline),
                      "models": {name: {"mean": round(sum(s) / len(s), 3), "max": round(max(s), 3),
                                        "ratio": round(sum(s) / sum(baseline), 2)} for name, s in seconds.items()}},
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
