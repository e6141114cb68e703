"""The BLAS libraries of a CPU process: the system OpenBLAS for MLX's matmuls, NumPy's own pinned to one thread.

MLX's Linux CPU wheel ships the reference BLAS (~5 GFLOP/s); loading OpenBLAS globally before MLX makes MLX's
BLAS calls resolve to it (results equal within float32 rounding; bench/README.md has the numbers). Harmless
where it is absent. Which libraries are loaded is read with threadpoolctl, whoever loaded them (this module,
`LD_PRELOAD`, another library).
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

# How long (2**n CPU cycles) OpenBLAS's idle worker threads spin before they sleep. At OpenBLAS's default, MLX's
# BLAS worker keeps spinning (sched_yield) through the host kernels that follow an MLX matmul, and the host
# pool's threads then share their cores with it. 2**20 cycles (~0.4 ms) still covers the gaps between one
# layer's consecutive MLX matmuls. A value the user set is kept.
THREAD_TIMEOUT = "20"


@functools.cache
def prefer_openblas() -> tuple[str, str] | None:
    """Load the system OpenBLAS globally (Linux, before MLX): (its path, the OPENBLAS_THREAD_TIMEOUT it read), or
    None where there is none or MLX is already imported (too late: MLX bound its BLAS symbols). Once per process."""
    if not sys.platform.startswith("linux") or "mlx.core" in sys.modules:
        return None
    arch = platform.machine()
    paths = [p.format(arch=arch) for p in _CANDIDATES]
    found = ctypes.util.find_library("openblas")
    if found:
        paths.append(found)
    for path in paths:
        if os.path.exists(path) or path == found:
            try:
                return path, _load_with_thread_timeout(path)
            except OSError:
                continue
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


def _loaded_libraries() -> list[dict]:
    """threadpoolctl's description of the BLAS / OpenMP libraries loaded in this process (none without it)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # a Linux dependency: elsewhere there is no system OpenBLAS to find
        return []
    return threadpool_info()


def _numpys_own(filepath: str) -> bool:
    """A library NumPy's wheel bundles (prefixed symbols MLX cannot bind to), not one MLX may use."""
    name = os.path.basename(filepath).lower()
    return "scipy_openblas" in name or f"{os.sep}numpy.libs{os.sep}" in filepath or f"{os.sep}numpy{os.sep}" in filepath


def system_openblas(libraries: list[dict]) -> str | None:
    """The first OpenBLAS among threadpoolctl-style library records that is not NumPy's bundled one."""
    for library in libraries:
        if library.get("internal_api") == "openblas" and not _numpys_own(library.get("filepath", "")):
            return library["filepath"]
    return None


@functools.cache
def openblas_mapped() -> str | None:
    """The OpenBLAS serving MLX's matmuls, or None: what decides the CPU's per-expert matmul, since its speed
    depends on the BLAS that serves MLX, not on who loaded it. Cached: read once, after MLX has bound its symbols
    (binding happens at import, RTLD_NOW)."""
    return system_openblas(_loaded_libraries())


REFERENCE_BLAS = "bundled reference BLAS"


def describe() -> str:
    """Which BLAS serves MLX's CPU matmuls (a path, or REFERENCE_BLAS), for benchmarks and notices."""
    return openblas_mapped() or REFERENCE_BLAS


SLOW_BLAS_NOTICE = ("No OpenBLAS is loaded, so denoising steps run about 10× slower on this CPU; "
                    "fix: apt install libopenblas0-pthread")


def slow_blas_notice() -> str | None:
    """The one line a person should see when MLX's CPU matmuls run on its bundled reference BLAS (Linux without
    OpenBLAS), else None. Callers ask only on the CPU backend (`engine.cpu.device.notices`)."""
    if not sys.platform.startswith("linux") or openblas_mapped():
        return None
    return SLOW_BLAS_NOTICE


@functools.cache
def single_thread_numpy_blas() -> bool:
    """Run NumPy's bundled OpenBLAS on one thread; True when it was found and set.

    The CPU path does its matmuls in two BLAS libraries: MLX's (the system OpenBLAS) and NumPy's (the host
    ops' expert and attention products). Each keeps a pool of one thread per core whose idle threads spin, so
    with both pools awake the two starve each other (bench/README.md). Called on the first host op, so a
    process that never runs one keeps NumPy as it was."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return False
    pinned = False
    for library in ThreadpoolController().lib_controllers:
        if library.internal_api == "openblas" and _numpys_own(library.filepath):
            library.set_num_threads(1)
            pinned = True
    return pinned
