"""Use the system's OpenBLAS for MLX's CPU matmuls on Linux, when it is installed.

MLX's Linux CPU wheel ships the reference BLAS (~5 GFLOP/s); loading OpenBLAS globally before MLX makes
MLX's BLAS calls resolve to it (measured 5 -> ~150 GFLOP/s on a 1024^3 matmul, results equal within
float32 rounding). Harmless where it is absent; off with DIFFUSION_CHAT_NO_OPENBLAS=1. Must run before
the first `import mlx`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import platform
import sys

_CANDIDATES = (
    "/usr/lib/{arch}-linux-gnu/openblas-pthread/libopenblas.so.0",
    "/usr/lib/{arch}-linux-gnu/openblas-openmp/libopenblas.so.0",
    "/usr/lib/{arch}-linux-gnu/libopenblas.so.0",
    "/usr/lib64/libopenblas.so.0",
    "/usr/lib/libopenblas.so.0",
)

loaded_from: str | None = None
loaded_thread_timeout: str | None = None  # the OPENBLAS_THREAD_TIMEOUT it was loaded with

# How long (2**n CPU cycles) OpenBLAS's idle worker threads spin before they sleep. At OpenBLAS's default, MLX's
# BLAS worker keeps spinning (sched_yield) through the host kernels that follow an MLX matmul, and on 2 cores the
# host pool's threads then share their cores with it. Measured here, alternating runs: the sampler's analysis of a
# 256 x 262,144 step 121-129 ms at the default against 98-105 ms at n = 20 (real-vocabulary bench), a mid-size
# MoE layer's expert block 11.8-13.9 ms of wall clock for 9.0 ms of thread CPU against 10.8-11.0 ms for 9.3-9.7 ms.
# 2**20 cycles (~0.4 ms) still covers the gaps between one layer's consecutive MLX matmuls. A value the user set
# is kept.
THREAD_TIMEOUT = "20"


def prefer_openblas() -> str | None:
    global loaded_from, loaded_thread_timeout
    if loaded_from or not sys.platform.startswith("linux") or os.environ.get("DIFFUSION_CHAT_NO_OPENBLAS"):
        return loaded_from
    if "mlx.core" in sys.modules:
        return None  # too late: MLX already bound its BLAS symbols
    arch = platform.machine()
    paths = [p.format(arch=arch) for p in _CANDIDATES]
    found = ctypes.util.find_library("openblas")
    if found:
        paths.append(found)
    for path in paths:
        if os.path.exists(path) or path == found:
            try:
                timeout = _load_with_thread_timeout(path)
            except OSError:
                continue
            loaded_from, loaded_thread_timeout = path, timeout
            return path
    return None


def _load_with_thread_timeout(path: str) -> str:
    """Load OpenBLAS globally and return the OPENBLAS_THREAD_TIMEOUT it read. OpenBLAS reads it once, while
    loading, so the variable is set just for the load and then put back as it was: child processes (a
    benchmark's mlx-vlm run) see the environment unchanged."""
    preset = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
    if preset is None:
        os.environ["OPENBLAS_THREAD_TIMEOUT"] = THREAD_TIMEOUT
    try:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    finally:
        if preset is None:
            del os.environ["OPENBLAS_THREAD_TIMEOUT"]
    return preset or THREAD_TIMEOUT


@functools.cache
def openblas_mapped() -> str | None:
    """The OpenBLAS mapped into this process, whoever loaded it (this module, `LD_PRELOAD`, another library),
    or None: what decides the CPU expert path, since its speed depends on the BLAS that serves MLX, not on who
    loaded it. NumPy's wheels bundle `scipy_openblas` with prefixed symbols MLX cannot bind to; it does not
    count. Cached: read once, after MLX has bound its symbols (binding happens at import, RTLD_NOW)."""
    if loaded_from:
        return loaded_from
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return openblas_among(maps.read())
    except OSError:
        return None


def openblas_among(maps: str) -> str | None:
    """The first OpenBLAS file among the mappings of a `/proc/<pid>/maps` text (symlinks followed)."""
    paths = sorted({line.split(maxsplit=5)[5].strip() for line in maps.splitlines() if len(line.split(maxsplit=5)) == 6})
    for path in paths:
        name = os.path.basename(os.path.realpath(path)).lower()
        if "openblas" in name and "scipy" not in name:
            return path
    return None


def describe() -> str:
    """Which BLAS serves MLX's CPU matmuls, for benchmarks and notices."""
    return openblas_mapped() or "bundled reference BLAS"


SLOW_BLAS_NOTICE = ("No OpenBLAS is loaded, so denoising steps run about 10× slower on this CPU; "
                    "fix: apt install libopenblas0-pthread")


def slow_blas_notice() -> str | None:
    """The one line a person should see when MLX's CPU matmuls run on its bundled reference BLAS (Linux without
    OpenBLAS, on the CPU backend), else None. A GPU backend does not need it."""
    if not sys.platform.startswith("linux") or openblas_mapped():
        return None
    from .models.host_ops import on_cpu  # imports MLX: only once the engine is loaded

    return SLOW_BLAS_NOTICE if on_cpu() else None


# NumPy wheels bundle their own OpenBLAS (prefixed symbols); the names of its thread setter, newest first.
_NUMPY_THREAD_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                         "openblas_set_num_threads64_", "openblas_set_num_threads")


@functools.cache
def single_thread_numpy_blas() -> bool:
    """Run NumPy's bundled OpenBLAS on one thread; True when it was found and set.

    The CPU path does its matmuls in two BLAS libraries: MLX's (the system OpenBLAS) and NumPy's (host_ops'
    expert and attention products). Each keeps a pool of one thread per core whose idle threads spin, so with
    both pools awake the two starve each other: measured on 2 cores (mid-size DiffusionGemma, one network step,
    one run each, quiet): both pools at 2 threads 593-664 ms, NumPy's at 1 thread 351-356 ms, host_ops off
    424-434 ms. Called on the first host op, so a process that never runs one keeps NumPy as it was."""
    import glob

    import numpy

    folder = os.path.join(os.path.dirname(numpy.__path__[0]), "numpy.libs")
    for path in sorted(glob.glob(os.path.join(folder, "*openblas*.so*"))):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _NUMPY_THREAD_SETTERS:
            setter = getattr(library, name, None)
            if setter is not None:
                setter(1)
                return True
    return False
