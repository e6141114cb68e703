"""Everything diffusion-chat does only because MLX runs on a CPU: the host (NumPy / Numba) versions of the
network's ops and the sampler's analysis, the thread pool they share, and the process set-up that makes MLX's
own CPU backend fast (the system OpenBLAS, glibc's malloc). Apple silicon and CUDA never take this path.

Models and samplers reach it only through their op seams (`engine.models.ops`, `engine.generation.fused`),
which ask `device.host_path()`. One switch turns it all off: `DIFFUSION_CHAT_HOST_OPS=0` for a process, or
`with engine.cpu.switch.disabled():` around code that needs MLX to see every op (a gradient). Off, a CPU runs
the pure-MLX path that Metal and CUDA run.

Importing this package has no side effects and does not import MLX: the entry points that run a local model
call `prepare_process()` once, before anything imports MLX.
"""

from __future__ import annotations

from . import blas, malloc


def prepare_process(*, openblas: bool = True) -> None:
    """Set the process up for MLX's CPU backend: load the system OpenBLAS (so MLX's matmuls resolve to it
    instead of the reference BLAS its Linux wheel bundles) and keep large allocations in glibc's heap. Both
    only on Linux, and only before the first `import mlx` / the engine's threads: call it first thing in an
    entry point that runs a model here (not in a remote-only app). `openblas=False` keeps the bundled BLAS
    (benchmarks comparing the two)."""
    if openblas:
        blas.prefer_openblas()
    malloc.keep_large_allocations()
