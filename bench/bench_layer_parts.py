"""Where a mid-size DiffusionGemma network step goes (not a test). Prints one JSON object of median ms.

Writes the mid-size random checkpoint (bench/random_checkpoint.py: hidden 512, 8 layers, 32 experts top-4,
vocab 32k, canvas 256) to a temp folder, prefills 120 tokens and times, each alone and evaluated: a whole
network step (soft embedding + decoder pass), the soft embedding, the self-conditioning MLP, the LM head, one
sliding and one full layer, and the parts of a layer (attention and its projections, dense MLP, router, routed
experts, one RMSNorm).

Usage: python bench/bench_layer_parts.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import engine  # noqa: E402

engine.prepare_process()  # first: it loads OpenBLAS before MLX on Linux
import mlx.core as mx  # noqa: E402
from random_checkpoint import write_random_dg_checkpoint  # noqa: E402


def median_ms(work, repeats: int) -> float:
    work()
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return round(1000 * sorted(times)[repeats // 2], 2)


def measure(folder: Path, repeats: int) -> dict:
    network = engine.load(str(folder)).network
    cache = network.prefill(mx.array([[i % 400 + 100 for i in range(120)]], dtype=mx.int32))
    ids = mx.random.randint(0, network.vocab_size, (1, 256)).astype(mx.int32)
    probabilities = mx.softmax(network.denoise(ids, cache)[0], axis=-1)
    soft = network.self_conditioning_from_probabilities(probabilities)
    embeddings = network._embed(ids)
    h = network.model.decoder.self_conditioning(embeddings, soft)
    mx.eval(probabilities, soft, embeddings, h)
    sliding, full = network.layers[0], network.layers[3]
    keys = dict(offset=cache.offset, key_start=0, mask=None, write=False)
    x = sliding.input_layernorm(h)
    flat = x.reshape(-1, x.shape[-1])
    indices, weights = sliding.router(flat)
    normed = network.model.decoder.norm(h)
    mx.eval(x, flat, indices, weights, normed)

    def step():
        signal = network.self_conditioning_from_probabilities(probabilities)
        mx.eval(network.denoise(ids, cache, self_conditioning=signal, softcap=False))

    parts = {
        "network_step": step,
        "soft_embedding": lambda: mx.eval(network.self_conditioning_from_probabilities(probabilities)),
        "self_conditioning_mlp": lambda: mx.eval(network.model.decoder.self_conditioning(embeddings, soft)),
        "lm_head": lambda: mx.eval(network.model.decoder.embed_tokens.as_linear(normed)),
        "sliding_layer": lambda: mx.eval(sliding(h, cache[0], layer_scalar=sliding.layer_scalar, **keys)),
        "full_layer": lambda: mx.eval(full(h, cache[3], layer_scalar=full.layer_scalar, **keys)),
        "attention": lambda: mx.eval(sliding.self_attn(x, cache[0], **keys)),
        "attention_projections": lambda: mx.eval(*sliding.self_attn.project(x, cache.offset)),
        "dense_mlp": lambda: mx.eval(sliding.mlp(x)),
        "router": lambda: mx.eval(*sliding.router(flat)),
        "routed_experts": lambda: mx.eval(sliding.experts(flat, indices, weights)),
        "rms_norm": lambda: mx.eval(sliding.post_feedforward_layernorm(x)),
    }
    return {name: median_ms(work, repeats) for name, work in parts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = write_random_dg_checkpoint(Path(scratch) / "mid")
        print(json.dumps({"benchmark": "layer_parts", "unit": "median ms", **measure(folder, args.repeats)},
                         indent=2))


if __name__ == "__main__":
    main()
