"""A MoE layer's routed experts, the whole block (gather, projections, gate, down projection, weighted sum) in
NumPy, for MLX on the CPU with float expert weights (the loader keeps them float32 there).

Why a whole block and not one op: on the CPU each expert sees only ~N*k/E rows (mid-size DiffusionGemma: ~32),
so the block is a few dozen small matrix products. MLX's gather_mm is slow there, and doing each product as its
own round trip pays the MLX <-> NumPy copies and an MLX sort/unsort twice per layer. Here the rows are copied
out once, the experts are split across the host pool's threads (NumPy's single-threaded BLAS per thread: small
products scale better across threads than inside one BLAS call), and one array comes back (bench/README.md,
"host experts").

Within float rounding of the MLX path (other BLAS calls; the k slots are added in order, as MLX's sum adds
them), and the same bits however many threads run it: each expert's products do not depend on the split.
"""

from __future__ import annotations

from typing import Callable

import mlx.core as mx
import numpy as np

from . import pool
from .ops import numpy_of

# Below this many token-expert pairs one thread is quicker than handing parts to the pool.
PARALLEL_MIN_PAIRS = 256

Gate = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (gate, up) -> activation, float32 NumPy arrays


def float_weights(*linears) -> bool:
    """Whether these SwitchLinears hold float weights the host can read (quantized ones: MLX's gather_qmm reads
    their packed codes)."""
    return all(getattr(linear, "weight", None) is not None and "scales" not in linear for linear in linears)


def _stacked(linear) -> np.ndarray:
    """A SwitchLinear's [experts, out, in] weights as float32 NumPy (a view, no copy, when they are float32)."""
    weight = linear.weight
    return np.asarray(memoryview(weight)) if weight.dtype == mx.float32 else numpy_of(weight)


def routed_experts(x: mx.array, indices: mx.array, weights: mx.array, gate_up, down, gate: Gate) -> mx.array:
    """sum_j weights[t, j] * down_e(gate(gate_up_e(x[t]))) for e = indices[t, j]: [N, H] -> [N, H] float32.

    `gate_up` is one stacked projection whose output halves are gate and up (both families' layout once
    sanitized), both projections with `float_weights`."""
    first, second = _stacked(gate_up), _stacked(down)
    mx.eval(x, indices, weights)   # one evaluation for the three copies below
    rows = numpy_of(x).reshape(-1, x.shape[-1])
    chosen = np.array(indices).reshape(-1)
    top_k = indices.shape[-1]
    num_experts = second.shape[0]
    order = np.argsort(chosen, kind="stable")          # token-expert pairs grouped by expert
    counts = np.bincount(chosen, minlength=num_experts)
    ends = np.cumsum(counts)
    gathered = rows[order // top_k]
    out = np.empty((chosen.size, second.shape[1]), dtype=np.float32)

    def run(experts: list[int]) -> None:
        # Products as W @ rows.T, not rows @ W.T: OpenBLAS runs a few dozen rows against a stacked expert's
        # [out, in] weight faster that way round, and the gate halves become contiguous blocks.
        for expert in experts:
            start, end = int(ends[expert] - counts[expert]), int(ends[expert])
            columns = gathered[start:end].T
            both = first[expert] @ columns
            width = both.shape[0] // 2
            hidden = gate(both[:width], both[width:])
            out[start:end] = (second[expert] @ hidden).T

    parts = pool.workers() if chosen.size >= PARALLEL_MIN_PAIRS else 1
    pool.run_parts(run, _balanced(counts, parts))
    per_slot = np.empty_like(out)
    per_slot[order] = out
    per_slot = per_slot.reshape(-1, top_k, second.shape[1])
    w = numpy_of(weights).reshape(-1, top_k, 1)
    total = per_slot[:, 0] * w[:, 0]
    for slot in range(1, top_k):           # the k slots added in order, like the MLX path's sum
        total += per_slot[:, slot] * w[:, slot]
    return mx.array(total.reshape(*x.shape[:-1], second.shape[1]))


def _balanced(counts: np.ndarray, parts: int) -> list[list[int]]:
    """The experts that have rows, split into `parts` lists of about equal rows (largest first, to the lightest)."""
    loads, lists = [0] * parts, [[] for _ in range(parts)]
    for expert in np.argsort(-counts, kind="stable").tolist():
        if counts[expert] == 0:
            break
        lightest = loads.index(min(loads))
        lists[lightest].append(expert)
        loads[lightest] += int(counts[expert])
    return [experts for experts in lists if experts]
