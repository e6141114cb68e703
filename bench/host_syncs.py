"""Counts host synchronisations: the calls that make the host wait for MLX's results (`mx.eval`,
`mx.array.item` / `tolist`, and NumPy conversions of MLX arrays: `np.array` / `np.asarray` / `memoryview`-less
buffer reads all go through `np.array` / `np.asarray` in this engine). Shared by `bench_denoise.py` (syncs per
step on the step's path) and `tests/test_mlx_path_syncs.py` (the MLX path's bound).

`mx.async_eval` is not counted: it schedules work and returns at once, the host does not wait.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import mlx.core as mx
import numpy as np


class SyncCounter:
    def __init__(self) -> None:
        self.count = 0
        self.kinds: dict[str, int] = {}

    def hit(self, kind: str) -> None:
        self.count += 1
        self.kinds[kind] = self.kinds.get(kind, 0) + 1


def _wrap_eval(counter: SyncCounter, original):
    def counted_eval(*args, **kwargs):
        counter.hit("mx.eval")
        return original(*args, **kwargs)
    return counted_eval


def _wrap_numpy(counter: SyncCounter, original, kind: str):
    def counted(obj, *args, **kwargs):
        if isinstance(obj, mx.array):
            counter.hit(kind)
        return original(obj, *args, **kwargs)
    return counted


def _wrap_method(counter: SyncCounter, original, kind: str):
    # nanobind's mx.array takes no new attributes, so the methods are counted through a subclass-free shim:
    # patched on the class where the binding allows it, else left alone (`patched_methods` says which).
    def counted(self, *args, **kwargs):
        counter.hit(kind)
        return original(self, *args, **kwargs)
    return counted


@contextmanager
def counting() -> Iterator[SyncCounter]:
    """Counts syncs made (on any thread) while the block runs."""
    counter = SyncCounter()
    saved = {"eval": mx.eval, "array": np.array, "asarray": np.asarray}
    methods = {name: getattr(mx.array, name) for name in ("item", "tolist")}
    mx.eval = _wrap_eval(counter, saved["eval"])
    np.array = _wrap_numpy(counter, saved["array"], "np.array")
    np.asarray = _wrap_numpy(counter, saved["asarray"], "np.asarray")
    patched = []
    for name, original in methods.items():
        try:
            setattr(mx.array, name, _wrap_method(counter, original, f"mx.array.{name}"))
            patched.append(name)
        except (AttributeError, TypeError):
            pass
    counter.patched_methods = patched
    try:
        yield counter
    finally:
        mx.eval, np.array, np.asarray = saved["eval"], saved["array"], saved["asarray"]
        for name in patched:
            setattr(mx.array, name, methods[name])
