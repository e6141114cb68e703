"""The glibc malloc probe that tests/test_import_side_effects.py and tests/test_malloc_tuning.py run in fresh
interpreters (the tuning `engine.prepare_process()` does is process-wide and stays, so each check needs its own
process): `MALLINFO` is the probe's shared code, `run_probe` runs a script made with it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Pasted into a probe script after its imports: glibc through ctypes, and how many blocks it mmaps afresh
# (mallinfo2().hblks) for a 64 MiB malloc, which an untuned glibc serves with its own mmap.
MALLINFO = """
import ctypes

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)

def new_mmaps_for_64_mib():
    before = libc.mallinfo2().hblks
    block = libc.malloc(64 << 20)
    new_mmaps = libc.mallinfo2().hblks - before
    libc.free(block)
    return new_mmaps
"""


def run_probe(script: str, *args: str) -> dict:
    """Runs `script` in a fresh interpreter at the repository root; its last line of output is JSON."""
    result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=ROOT,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])
