"""Time mlx-vlm's DiffusionGemma prefill on one checkpoint folder (run by bench_prefill.py --compare-mlx-vlm,
in mlx-vlm's own interpreter). Prints one JSON line. Imports nothing from this project: it measures mlx-vlm
as a user gets it (its loader and `diffusion_prefill_cache`, evaluated).

Usage: python bench/mlx_vlm_prefill.py FOLDER --tokens 8192 32768
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--tokens", type=int, nargs="+", default=[8192, 32768])
    args = parser.parse_args()

    import mlx.core as mx
    import mlx_vlm
    from mlx_vlm.utils import load

    model, _ = load(args.folder)

    def prefill(tokens: int) -> float:
        prompt = mx.array([[int(i) % 400 + 100 for i in range(tokens)]], dtype=mx.int32)
        mx.eval(prompt)
        began = time.perf_counter()
        cache = model.diffusion_prefill_cache(prompt, cache=model.make_cache())
        mx.eval([c.state for c in cache])
        return time.perf_counter() - began

    prefill(256)  # warm-up
    rows = []
    for tokens in args.tokens:
        seconds = prefill(tokens)
        rows.append({"prompt_tokens": tokens, "prefill_s": round(seconds, 2), "tokens_per_s": round(tokens / seconds, 1)})
    print(json.dumps({"mlx_vlm": mlx_vlm.__version__, "mlx": mx.__version__, "rows": rows}))


if __name__ == "__main__":
    main()
