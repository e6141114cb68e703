"""`bench/bench_serve.py --concurrency N`: total tokens/s of N concurrent streams against a batching server
(`--max-batch N`) and a serializing one (`--max-batch 1`), alternated `--reps` times (the order turning) after
one warm-up each, in one run; plus, in this process, what batching and prefix reuse do to the logits.

Every stream runs fixed steps per block at temperature 0 (seed = its index), so both servers do the same work.
Reported: per round the wall time from the first request to the last `[DONE]` and the completion tokens of all
streams; medians; `speedup` (serialized wall / batched wall, per alternated pair, and their median); whether
each batched answer equals the serialized one (on a random-weight checkpoint a near-tie may flip a token);
`logits` — the largest difference between a batched forward and solo forwards, and between a reused prefix cache
and a fresh prefill, both as a fraction of the logits' largest magnitude.
"""

from __future__ import annotations

import json
import statistics
import threading
import time

import httpx
import mlx.core as mx
import numpy as np


def bodies(concurrency: int, settings: dict) -> list[dict]:
    return [{"messages": [{"role": "user", "content": f"Tell me about block diffusion, part {i + 1}."}],
             "stream": True, "stream_options": {"include_usage": True}, "temperature": 0, "seed": i, **settings}
            for i in range(concurrency)]


def one_stream(url: str, body: dict) -> tuple[str, int]:
    """(content, completion tokens) of one streamed answer."""
    text, tokens = "", 0
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=1800) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[len("data: "):])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            for choice in chunk.get("choices", []):
                text += choice.get("delta", {}).get("content") or ""
    return text, tokens


def concurrent_round(url: str, requests: list[dict], cpu_s=lambda: None) -> dict:
    """All requests at once, one thread each: wall time, the server's CPU seconds (`cpu_s()` before and after:
    less shaken than wall time by other load on a shared machine), total completion tokens, the answers."""
    answers: list = [None] * len(requests)
    cpu = cpu_s()

    def ask(index: int) -> None:
        answers[index] = one_stream(url, requests[index])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(requests))]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    time.sleep(0.05)   # the server's last writes land in its CPU count
    cpu = None if cpu is None else cpu_s() - cpu
    tokens = sum(answer[1] for answer in answers)
    return {"wall_s": wall, "cpu_s": cpu, "tokens": tokens, "tokens_per_s": tokens / wall,
            "answers": [a[0] for a in answers]}


def compare(urls: dict[str, str], requests: list[dict], reps: int, cpu_s: dict | None = None) -> dict:
    """Alternate the two servers `reps` times (after one warm-up each); medians and per-pair speedups.
    `cpu_s[name]()`: that server's CPU seconds so far."""
    cpu_s = cpu_s or {}
    runs: dict[str, list[dict]] = {name: [] for name in urls}
    for name in urls:
        concurrent_round(urls[name], requests)
    for rep in range(reps):
        names = list(urls) if rep % 2 == 0 else list(urls)[::-1]
        for name in names:
            runs[name].append(concurrent_round(urls[name], requests, cpu_s.get(name, lambda: None)))
    pairs = [s["wall_s"] / b["wall_s"] for s, b in zip(runs["serialized"], runs["batched"])]
    cpu_pairs = [s["cpu_s"] / b["cpu_s"] for s, b in zip(runs["serialized"], runs["batched"])
                 if s["cpu_s"] and b["cpu_s"]]
    summary = {name: {"wall_s": round(statistics.median(r["wall_s"] for r in results), 3),
                      "cpu_s": [None if r["cpu_s"] is None else round(r["cpu_s"], 1) for r in results],
                      "tokens_per_s": round(statistics.median(r["tokens_per_s"] for r in results), 2),
                      "tokens": results[0]["tokens"],
                      "wall_s_range": [round(min(r["wall_s"] for r in results), 2),
                                       round(max(r["wall_s"] for r in results), 2)]}
               for name, results in runs.items()}
    serial_answers, batch_answers = runs["serialized"][-1]["answers"], runs["batched"][-1]["answers"]
    return {**summary, "speedup_per_pair": [round(p, 3) for p in pairs],
            "speedup": round(statistics.median(pairs), 3),
            "cpu_speedup_per_pair": [round(p, 3) for p in cpu_pairs],
            "answers_equal": sum(a == b for a, b in zip(serial_answers, batch_answers)),
            "answers": len(requests)}


def logit_differences(model, concurrency: int) -> dict:
    """Batched forward vs solo forwards, and a reused prefix cache vs a fresh prefill (the same canvas), as
    max |difference| / max |logits|."""
    from engine.generation.forward import DenoiseCall, forward_all

    network = model.network
    rng = np.random.default_rng(0)
    vocab, canvas = network.vocab_size, network.canvas_length
    calls = []
    for i in range(concurrency):
        prompt = mx.array(rng.integers(0, vocab, (1, 40 + 17 * i)), dtype=mx.int32)
        ids = mx.array(rng.integers(0, vocab, (1, canvas)), dtype=mx.int32)
        calls.append(DenoiseCall(ids, network.prefill(prompt), {"softcap": False}))
    batched = [np.array(x) for x in forward_all(network, calls)]
    solo = [np.array(call.run(network)) for call in calls]
    scale = max(float(np.abs(s).max()) for s in solo)
    batch_diff = max(float(np.abs(b - s).max()) for b, s in zip(batched, solo))
    flips = sum(int((b.argmax(-1) != s.argmax(-1)).sum()) for b, s in zip(batched, solo))
    # A server's second identical request: the cache keeps all but the prompt's last token (a session always
    # encodes at least one new token) and encodes that one in a pass of its own.
    prompt = mx.array(rng.integers(0, vocab, (1, 120)), dtype=mx.int32)
    fresh = network.prefill(prompt)
    reused = network.prefill(prompt[:, -1:], network.prefill(prompt[:, :-1]))
    ids = calls[0].canvas
    a, b = np.array(network.denoise(ids, fresh, softcap=False)), np.array(network.denoise(ids, reused, softcap=False))
    return {"batched_vs_solo": batch_diff / scale, "batched_argmax_flips": flips,
            "positions": concurrency * canvas, "reused_cache_vs_fresh_prefill": float(np.abs(a - b).max()) /
            float(np.abs(a).max()), "logit_scale": scale}
