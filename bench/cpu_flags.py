"""What the benchmarks record about the CPU: whether /proc/cpuinfo lists a flag (AVX-512 decides whether NumPy's
float32 exp / tanh are vectorised, hence what the Numba kernels buy)."""

from __future__ import annotations


def cpu_has(flag: str) -> bool | None:
    """True / False from /proc/cpuinfo's flags; None where there is no such file (not Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return any(line.startswith("flags") and flag in line.split() for line in info)
    except OSError:
        return None
