"""Where a DiffusionGemma generation step's time goes: the network, or the sampler around it.

Instrumentation, not a model of the cost: while a generation runs, `Network.denoise` (building the decoder's
lazy graph) and `engine.generation.diffusion_gemma.analyse` are wrapped; the wrapper first evaluates the logits
(the wait for the whole matrix part of the step, the previous step's self-conditioning product included), then
runs the real `analyse` (the one pass over the logits). Evaluating the logits there is what `analyse` itself
does first on the host path, so the step is not slowed. Three buckets, summed over the run:

  network_ms      graph building in `denoise` + the evaluation of its logits
  analyse_ms      `fused.analyse`: softcap, temperature, softmax, entropy, proposals (the vocabulary-wide work)
  other_host_ms   the rest of the step: draws, per-position decisions, the probabilities' hand-off to the next
                  self-conditioning product, the Step event (step time - network - analyse)

sampler_share = (analyse_ms + other_host_ms) / step: everything in a step that is not the network.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import mlx.core as mx

from engine.generation import diffusion_gemma
from engine.models.diffusion_gemma import Network

# Bound at import, before bench/host_syncs.py wraps mx.eval: this measuring evaluation is the benchmark's, not
# one of the step's own host synchronisations, so the sync count leaves it out.
_measuring_eval = mx.eval


@contextmanager
def timed_step_parts():
    totals = {"network_s": 0.0, "analyse_s": 0.0}
    original_analyse, original_denoise = diffusion_gemma.analyse, Network.denoise

    def denoise(self, *args, **kwargs):
        began = time.perf_counter()
        try:
            return original_denoise(self, *args, **kwargs)
        finally:
            totals["network_s"] += time.perf_counter() - began

    def analyse(logits, **kwargs):
        began = time.perf_counter()
        _measuring_eval(logits)
        evaluated = time.perf_counter()
        try:
            return original_analyse(logits, **kwargs)
        finally:
            totals["network_s"] += evaluated - began
            totals["analyse_s"] += time.perf_counter() - evaluated

    diffusion_gemma.analyse, Network.denoise = analyse, denoise
    try:
        yield totals
    finally:
        diffusion_gemma.analyse, Network.denoise = original_analyse, original_denoise


def shares(totals: dict, denoise_s: float, steps: int) -> dict:
    """Per-step milliseconds of each bucket and the sampler's share, from `timed_step_parts` totals."""
    other = max(denoise_s - totals["network_s"] - totals["analyse_s"], 0.0)
    per_step = 1000 / steps
    return {
        "instrumented_ms_per_step": round(denoise_s * per_step, 2),
        "network_ms": round(totals["network_s"] * per_step, 2),
        "analyse_ms": round(totals["analyse_s"] * per_step, 2),
        "other_host_ms": round(other * per_step, 2),
        "sampler_share": round((totals["analyse_s"] + other) / denoise_s, 3) if denoise_s else None,
        "analyse_share": round(totals["analyse_s"] / denoise_s, 3) if denoise_s else None,
    }
