"""How big recorded trajectories are and what recording costs; prints JSON.

* `real`: the tiny DiffusionGemma fixture with a 256-position canvas (same weights, config changed), one
  48-step block, generated with and without `record=True` (alternating, `--reps` each): wall time per run,
  the trajectory's size and the time its encoding takes.
* `synthetic`: a 256 x 48 DiffusionGemma block with the real vocabulary's noise (262,144 ids, uniform, so it
  does not compress), an acceptance ramp, converging candidates and random float16 entropies: the size a real
  26B checkpoint's block comes to, at worst.

    python bench/bench_trajectory.py [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import engine  # noqa: E402

engine.prepare_process()  # first: it loads OpenBLAS before MLX on Linux
from engine.events import Step  # noqa: E402
from engine.recording.trajectory import Trajectory, decode, encode  # noqa: E402


def wide_fixture(folder: Path) -> Path:
    source = ROOT / "tests" / "fixtures" / "checkpoints" / "dg_text"
    target = folder / "dg_text_canvas256"
    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    config["canvas_length"] = 256
    (target / "config.json").write_text(json.dumps(config))
    return target


def real(reps: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        model = engine.load(wide_fixture(Path(folder)))
        settings = engine.Settings(max_tokens=256, max_denoising_steps=48, diffusion_full_canvas=True,
                                   confidence_threshold=1e-9)
        times = {False: [], True: []}
        data = b""
        for rep in range(reps):
            for record in ((False, True) if rep % 2 == 0 else (True, False)):
                began = time.perf_counter()
                finished = list(engine.generate(model, prompt_ids=[2, 105, 194], settings=settings, record=record))[-1]
                times[record].append(time.perf_counter() - began)
                data = finished.trajectory or data
        trajectory = decode(data)
        began = time.perf_counter()
        encode(trajectory)
        encode_s = time.perf_counter() - began
    return {"steps": len(trajectory.frames), "canvas": len(trajectory.frames[0].canvas), "bytes": len(data),
            "run_s_without": round(min(times[False]), 4), "run_s_with": round(min(times[True]), 4),
            "encode_s": round(encode_s, 4)}


def synthetic(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    vocab, length, steps = 262_144, 256, 48
    answer = rng.integers(0, 30_000, length)
    frames = []
    for k in range(steps):
        accepted = rng.random(length) < (k + 1) / steps
        right = rng.random(length) < 0.3 + 0.7 * (k + 1) / steps
        candidates = np.where(right, answer, rng.integers(0, 30_000, length)).astype(np.int32)
        canvas = np.where(accepted, candidates, rng.integers(0, vocab, length)).astype(np.int32)
        scores = (rng.random(length) * 6 * (1 - k / steps)).astype(np.float32)
        frames.append(Step(block=0, step=k, max_steps=steps, canvas=canvas, candidates=candidates, accepted=accepted,
                           newly_accepted=int(accepted.sum()), scores=scores, score_kind="entropy",
                           temperature=0.8, noise_is_mask=False))
    trajectory = Trajectory({"family": "diffusion_gemma", "settings": {}}, frames, [], list(range(500)),
                            {0: rng.integers(0, vocab, length).astype(np.int32)})
    began = time.perf_counter()
    data = encode(trajectory)
    return {"steps": steps, "canvas": length, "vocab": vocab, "bytes": len(data),
            "raw_bytes": steps * length * (4 + 4 + 2) + steps * length // 8 * 1,
            "encode_s": round(time.perf_counter() - began, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps({"real": real(args.reps), "synthetic": synthetic()}, indent=2))


if __name__ == "__main__":
    main()
