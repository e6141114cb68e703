"""One pool of worker threads, shared by the host (NumPy) kernels of the network and the sampler.

NumPy releases the GIL inside its vectorised loops and BLAS calls, so a kernel whose parts are independent (the
rows of a logits matrix, the experts of a MoE layer) runs its parts on every core, while NumPy's own BLAS stays
on one thread (`engine.cpu.blas.single_thread_numpy_blas`) and never fights MLX's. One pool, not one per kernel:
the kernels run one after another on the engine thread, so a second pool would only add idle threads.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def workers() -> int:
    """Threads worth splitting a kernel into: one per core, at most 8 (beyond that, memory bandwidth bounds)."""
    return max(1, min(os.cpu_count() or 1, 8))


@functools.cache
def _pool() -> ThreadPoolExecutor:
    # Made on first use, so that a process that never runs a host kernel starts no threads.
    return ThreadPoolExecutor(max_workers=workers(), thread_name_prefix="diffusion-chat-host")


def run_parts(work: Callable[[T], R], parts: Iterable[T]) -> list[R]:
    """`[work(part) for part in parts]`, the parts on the pool's threads (one part: on this thread, no hand-off);
    exceptions propagate."""
    parts = list(parts)
    if len(parts) <= 1:
        return [work(part) for part in parts]
    return list(_pool().map(work, parts))
