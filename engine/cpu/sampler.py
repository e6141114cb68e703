"""The host (NumPy) half of the fused sampler (`engine.generation.fused`): one read of a step's logits gives the
argmax, the entropy, the proposals, their probabilities and the softmax, rows split over the host pool.

MLX's CPU backend runs element-wise transcendental ops single-threaded and unvectorised, and every pass over
256 x 32k logits costs ~100 ms there (bench/README.md), so on the CPU the logits are read once (the step's one
host synchronisation) and analysed here.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from ..generation.analysis import Analysis
from . import kernels, pool


def analyse(logits: mx.array, proposal, uniforms, *, probabilities_into: mx.array | None = None,
            **options) -> Analysis:
    """`engine.generation.fused.analyse` on the host (`options` as `_host` takes them)."""
    # A view of MLX's buffer, not a copy (a pass over L x V saved): the host only ever reads it.
    logits_view = np.asarray(logits) if logits.dtype == mx.float32 else np.array(logits, dtype=np.float32)
    wanted = options["probabilities"]
    softmax, p_out = _mlx_owned(logits_view.shape, probabilities_into) if wanted else (None, None)
    analysis = _host_rows(logits_view, proposal, uniforms, p_out=p_out, **options)
    if wanted:
        analysis.probabilities = softmax
    return analysis


# Rows are independent (every reduction runs along the vocabulary), and NumPy releases the GIL inside its
# element-wise kernels: a large step's rows are analysed by one thread per core, bit-identical to one thread.
PARALLEL_MIN_ELEMENTS = 1 << 21       # below ~2M logits (e.g. 64 x 32k) the threads cost more than they save
CACHED_ELEMENTS = 1 << 19             # rows analysed together by one thread: ~2 MiB of logits


def _mlx_owned(shape: tuple[int, ...], reusable: mx.array | None = None) -> tuple[mx.array, np.ndarray]:
    """An MLX float32 array and a writable NumPy view of its memory: the host writes the softmax straight into
    the array the next step's self-conditioning product reads, instead of copying it over; `reusable` (the
    previous step's) saves the allocation too (bench/README.md, "host sampler").
    MLX reads an array's memory only when a graph that uses it is evaluated, so writing a new array, or one
    whose last use has been evaluated, is safe."""
    view = None
    if reusable is not None and reusable.shape == tuple(shape) and reusable.dtype == mx.float32:
        view = np.asarray(memoryview(reusable))
        owned = reusable
    if view is None or not (view.flags.writeable and view.flags.c_contiguous):
        owned = mx.zeros(shape, dtype=mx.float32)
        mx.eval(owned)
        view = np.asarray(memoryview(owned))
    return owned, view


def _host_rows(z: np.ndarray, proposal, uniforms, p_out: np.ndarray | None = None, **options) -> Analysis:
    workers = min(pool.workers(), z.shape[0])
    if workers < 2 or z.size < PARALLEL_MIN_ELEMENTS:
        return _host(z, proposal, uniforms, p_out=p_out, **options)
    bounds = np.linspace(0, z.shape[0], workers + 1).astype(int)
    # one softmax array, written in place by every chunk (no concatenation)
    p = np.empty(z.shape, np.float32) if p_out is None else p_out
    proposal = None if proposal is None else np.asarray(proposal)
    uniforms = None if uniforms is None else np.asarray(uniforms)
    # Each thread takes its rows a few at a time: the ten-odd passes over a few rows run in the core's cache
    # instead of streaming the whole share through memory ten times (single thread, 128 x 262k: 92 -> 75 ms).
    step = max(1, CACHED_ELEMENTS // z.shape[1])
    per_thread = [[slice(a, min(a + step, end)) for a in range(start, end, step)]
                  for start, end in zip(bounds[:-1], bounds[1:])]

    # A draw from the softmax itself (temperature 1, no filters) is made once per thread over all its rows, not
    # per piece: many small draws hold the GIL between their NumPy calls while the other thread waits (256 x
    # 262k: the draw's share of the analysis 26 -> ~10 ms). Rows are independent, so the ids are the same.
    draw_after = (uniforms is not None and proposal is None and options["temp"] == 1.0 and not options["top_k"]
                  and options["top_p"] is None)

    # The pieces then skip the draw and the proposals' probability (their argmax stand-ins are not kept).
    piece_options = dict(options, confidence_from=None) if draw_after else options

    def part(rows_list: list[slice]) -> tuple[list[Analysis], np.ndarray | None, np.ndarray | None]:
        analyses = [_host(z[rows], None if proposal is None else proposal[rows],
                          None if uniforms is None or draw_after else uniforms[rows], p_out=p[rows], **piece_options)
                    for rows in rows_list]
        if not draw_after:
            return analyses, None, None
        rows = slice(rows_list[0].start, rows_list[-1].stop)
        drawn = _inverse_transform(p[rows], uniforms[rows])
        return analyses, drawn, None if options["confidence_from"] is None else _gather(p[rows], drawn)

    results = pool.run_parts(part, per_thread)
    parts = [a for analyses, _, _ in results for a in analyses]   # in row order
    joined = {name: np.concatenate([getattr(a, name) for a in parts]) for name in ("argmax", "entropy", "proposal")}
    probability = None if parts[0].probability is None else np.concatenate([a.probability for a in parts])
    if draw_after:
        joined["proposal"] = np.concatenate([drawn for _, drawn, _ in results])
        if options["confidence_from"] is not None:
            probability = np.concatenate([chosen for _, _, chosen in results])
    return Analysis(joined["argmax"], joined["entropy"], joined["proposal"], probability,
                    p if options["probabilities"] else None, all(a.finite for a in parts))


def _host(logits: np.ndarray, proposal, uniforms, *, softcap, temperature, temp, top_k, top_p, confidence_from,
          probabilities, check_finite, p_out: np.ndarray | None = None) -> Analysis:
    """The analysis of `logits` (read only: it may be MLX's own buffer); `p_out` receives the softmax."""
    finite = bool(np.isfinite(logits).all()) if check_finite else True
    vectorised = kernels.available()   # Numba's vectorised exp / tanh (engine.cpu.kernels), else NumPy's
    z = logits
    if softcap:
        # The network's cap * tanh(x / cap), then / temperature: the cap's scale and the temperature in one
        # multiply, x / cap as x * (1 / cap); one fused pass with the kernels, three NumPy passes without.
        if vectorised:
            z = np.empty(logits.shape, np.float32)
            kernels.softcapped(logits, np.float32(1.0 / softcap), np.float32(softcap / temperature), z)
        else:
            z = np.multiply(logits, np.float32(1.0 / softcap))
            np.tanh(z, out=z)
            np.multiply(z, np.float32(softcap / temperature), out=z)
    elif temperature != 1.0:
        z = np.divide(logits, np.float32(temperature))
    argmax = z.argmax(axis=-1).astype(np.int32)
    top = np.take_along_axis(z, argmax[:, None].astype(np.int64), axis=-1)
    if vectorised:
        p = np.empty(z.shape, np.float32) if p_out is None else p_out
        kernels.exp_shifted(np.ascontiguousarray(z), np.ascontiguousarray(top[:, 0]), p)
    else:
        p = np.subtract(z, top, out=p_out)
        np.exp(p, out=p)
    total = p.sum(axis=-1, keepdims=True)
    np.divide(p, total, out=p)
    entropy = (top + np.log(total))[:, 0] - np.einsum("lv,lv->l", p, z)
    # The distribution proposals come from (recorded proposals too: their probability is read under it).
    q = p
    if temp != 0 and (uniforms is not None or confidence_from == "proposal") and (temp != 1.0 or top_k or top_p):
        q = _host_softmax(_host_filtered(z / np.float32(temp), top_k, top_p))
    if proposal is None:
        proposal = argmax if uniforms is None else _inverse_transform(q, uniforms)
    proposal = np.asarray(proposal, np.int32)
    probability = None if confidence_from is None else _gather(q if confidence_from == "proposal" else p, proposal)
    return Analysis(argmax, entropy.astype(np.float32), proposal, probability, p if probabilities else None, finite)


def _host_softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _host_filtered(z: np.ndarray, top_k: int | None, top_p: float | None) -> np.ndarray:
    """The same filters as sampling.top_k_filter / top_p_filter, on the host."""
    if top_k and top_k < z.shape[-1]:
        kth = np.partition(z, -top_k, axis=-1)[:, -top_k][:, None]
        z = np.where(z < kth, -np.inf, z)
    if top_p is not None:
        order = np.argsort(-z, axis=-1, kind="stable")
        ranked = np.take_along_axis(z, order, axis=-1)
        cumulative = np.cumsum(_host_softmax(ranked), axis=-1)
        drop_ranked = np.concatenate([np.zeros_like(cumulative[:, :1]), cumulative[:, :-1]], axis=-1) > top_p
        drop = np.empty_like(drop_ranked)
        np.put_along_axis(drop, order, drop_ranked, axis=-1)
        z = np.where(drop, -np.inf, z)
    return z


# The draw's block size: the running sum is built per block of ids, then only inside the block that holds the
# draw (a whole-vocabulary np.cumsum is sequential: 256 x 262,144 took 220 ms, half the step's analysis).
DRAW_BLOCK = 1024


def _inverse_transform(q: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """One draw per row of the categorical distribution `q`: the first id whose cumulative probability
    exceeds u times the row's total.

    The cumulative sum is two-level, exact up to float rounding: block totals (a vectorised sum), their
    running sum (V / DRAW_BLOCK entries), the block that holds the target, then a running sum inside that block
    only, plus the blocks before it. A running sum of non-negative floats never decreases, so counting the
    entries <= the target finds the first one above it (the device path's way). Whole rows at once: no Python
    loop over rows, which would hold the GIL while the other analysis threads wait."""
    rows = np.arange(q.shape[0])
    starts = np.arange(0, q.shape[-1], DRAW_BLOCK)
    offsets = np.cumsum(np.add.reduceat(q, starts, axis=-1), axis=-1)
    targets = (np.asarray(uniforms, np.float32) * offsets[:, -1])[:, None]
    # A target at the very top (u * total rounding to the total) goes to the last block with mass.
    last_with_mass = (offsets < offsets[:, -1:]).sum(axis=-1)
    block = np.minimum((offsets <= targets).sum(axis=-1), last_with_mass)
    begin = starts[block]
    columns = begin[:, None] + np.arange(DRAW_BLOCK)
    inside = np.take_along_axis(q, np.minimum(columns, q.shape[-1] - 1), axis=-1)
    inside[columns >= q.shape[-1]] = 0.0        # a short last block: nothing past the vocabulary
    cumulative = np.cumsum(inside, axis=-1)
    before = np.where(block > 0, offsets[rows, np.maximum(block - 1, 0)], np.float32(0.0))
    cumulative += before[:, None]
    index = (cumulative <= targets).sum(axis=-1)
    for row in np.flatnonzero(index >= np.minimum(DRAW_BLOCK, q.shape[-1] - begin)):
        # Rounding put the target past this block's own running total: the draw is its last id with mass.
        mass = np.flatnonzero(inside[row])
        index[row] = mass[-1] if mass.size else 0   # (no mass at all: non-finite logits)
    return (begin + index).astype(np.int32)


def _gather(q: np.ndarray, ids: np.ndarray) -> np.ndarray:
    return np.take_along_axis(q, ids[:, None].astype(np.int64), axis=-1)[:, 0].astype(np.float32)
