"""`import engine` and `import tui.config` change nothing in the process: no OpenBLAS mapped, no MLX imported, glibc's
malloc at its defaults (a 64 MiB block still gets its own mmap). Only `engine.prepare_process()`, which the entry
points that run a local model call, loads OpenBLAS and tunes malloc. Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import ctypes, json, os, sys
import engine, tui.config
if sys.argv[1] == "prepared":
    engine.prepare_process()

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
before = libc.mallinfo2().hblks
block = libc.malloc(64 << 20)
new_mmaps = libc.mallinfo2().hblks - before
libc.free(block)
with open("/proc/self/maps") as maps:
    mapped = sorted({os.path.basename(line.split()[-1]) for line in maps if "openblas" in line.lower()
                     and "scipy_openblas" not in line})
print(json.dumps({"new_mmaps": new_mmaps, "openblas": mapped, "mlx": "mlx.core" in sys.modules,
                  "numpy": "numpy" in sys.modules}))
"""


def _probe(how: str) -> dict:
    result = subprocess.run([sys.executable, "-c", PROBE, how], capture_output=True, text=True, cwd=ROOT,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _system_openblas() -> bool:
    from engine.cpu import blas

    return any(Path(path.format(arch=__import__("platform").machine())).exists() for path in blas._CANDIDATES)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="OpenBLAS loading and glibc's malloc are Linux matters")
def test_importing_the_engine_and_the_settings_file_changes_nothing():
    assert _probe("plain") == {"new_mmaps": 1, "openblas": [], "mlx": False, "numpy": False}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="OpenBLAS loading and glibc's malloc are Linux matters")
def test_prepare_process_tunes_malloc_and_maps_the_system_openblas_where_there_is_one():
    report = _probe("prepared")
    assert report["new_mmaps"] == 0 and not report["mlx"]
    assert bool(report["openblas"]) == _system_openblas()
