"""Keep large allocations in the C heap on Linux (glibc): a CPU step's big arrays stop paying page faults.

glibc serves every allocation above 32 MiB with a fresh `mmap` and unmaps it on free, so each one pays a page
fault and the kernel's zeroing for every 4 KiB page it touches. A CPU step at Gemma 4's real vocabulary
(256 x 262,144 logits) makes several 256 MiB arrays per step (MLX's logits and the ops on them, NumPy's
sampler arrays, the probabilities handed back to MLX), and those faults were most of its cost
(bench/README.md, "malloc").

So, once per process (`engine.cpu.prepare_process`): no mmap for large blocks (M_MMAP_MAX 0), freed memory
kept rather than trimmed back to the kernel below 1 GiB at the heap's top (M_TRIM_THRESHOLD), and one arena
(M_ARENA_MAX 1), because the engine runs on its own thread, and glibc's per-thread arenas cannot hold such
blocks (they fall back to mmap). That is why it happens before the engine's threads exist and not at a model
load: a thread keeps the arena its first malloc chose. The cost is that memory a step freed stays with the
process for the next step, which is what a generation loop wants. Memory freed once and not needed again (the
low-float copies a CPU load converts to float32, a previous model's weights) is handed back by
`release_free_memory()` after each load. Nothing happens off Linux or without glibc's `mallopt` (musl).
"""

from __future__ import annotations

import ctypes
import functools
import sys

# glibc's <malloc.h>
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
_TRIM_THRESHOLD = 1 << 30


@functools.cache
def keep_large_allocations() -> bool:
    """Tune glibc's malloc as above; True when every setting took (cached: runs once per process)."""
    if not sys.platform.startswith("linux"):
        return False
    mallopt = _glibc("mallopt", (ctypes.c_int, ctypes.c_int))
    if mallopt is None:
        return False
    results = [mallopt(_M_MMAP_MAX, 0), mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD), mallopt(_M_ARENA_MAX, 1)]
    return all(result == 1 for result in results)


def release_free_memory() -> bool:
    """Return the heap's free pages to the kernel (glibc's malloc_trim); True when it ran. Cheap: it walks the
    free lists. Called once a model's weights are in place (`engine.cpu.device.after_load`)."""
    trim = _glibc("malloc_trim", (ctypes.c_size_t,)) if sys.platform.startswith("linux") else None
    if trim is None:
        return False
    trim(0)
    return True


def _glibc(name: str, argtypes: tuple):
    """The process's C library function `name` returning int, or None where there is none (musl, no libc)."""
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, ctypes.c_int
    return function
