"""Which path this process's MLX device takes, and what a model load does for the CPU (imports MLX).

The only module that asks MLX for its device: the op seams (`engine.models.ops`, `engine.generation.fused`)
and the loader ask here.
"""

from __future__ import annotations

import mlx.core as mx

from . import blas, kernels, malloc, switch


def on_cpu() -> bool:
    return mx.default_device() == mx.cpu


def host_path() -> bool:
    """True where the host (NumPy) versions of the ops run: MLX on the CPU and the switch on."""
    if switch.requested() and on_cpu():
        blas.single_thread_numpy_blas()  # once (cached): NumPy's and MLX's BLAS pools must not fight
        return True
    return False


def backend_weights(weights: dict) -> dict:
    """A checkpoint's tensors as this backend runs them: float32 on the CPU, where MLX's gather-matmul (MoE
    experts) accepts float32 only and bfloat16 matmuls are slow; unchanged elsewhere."""
    if not on_cpu():
        return weights
    return {k: v.astype(mx.float32) if v.dtype in (mx.bfloat16, mx.float16) else v for k, v in weights.items()}


def after_load(say=None) -> None:
    """What a model load ends with: hand the load's freed copies back to the kernel; compile the host kernels
    (Numba, once per install) now rather than in the first denoising step. `say(text)` names that stage."""
    malloc.release_free_memory()
    if host_path():
        if say is not None:
            say("compiling kernels (once per install)")
        kernels.warm_up()


def notices() -> tuple[str, ...]:
    """Lines a person should read about this backend (the slow-BLAS warning), for `ModelInfo.notices`."""
    notice = blas.slow_blas_notice() if on_cpu() else None
    return (notice,) if notice else ()
