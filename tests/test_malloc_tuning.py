"""engine._malloc: after a CPU model load, large allocations come from the heap instead of fresh mmaps (whose
page faults dominated a real-vocabulary step), and the switch can be turned off. Each check runs in a fresh
interpreter: the tuning is process-wide and, once made, stays."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT = ROOT / "tests" / "fixtures" / "checkpoints" / "dg_text"

# Counts glibc's mmapped blocks (mallinfo2().hblks) around a 64 MiB malloc/free, after loading a model.
PROBE = f"""
import ctypes, json
import engine
engine.load({str(CHECKPOINT)!r})
from engine import _malloc

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
during = libc.mallinfo2().hblks
libc.free(block)
print(json.dumps({{"tuned": _malloc.keep_large_allocations(), "new_mmaps": during - before}}))
"""


def _probe(**env) -> dict:
    import os

    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is a Linux matter")
def test_a_cpu_model_load_keeps_large_blocks_in_the_heap():
    assert _probe() == {"tuned": True, "new_mmaps": 0}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is a Linux matter")
def test_the_tuning_can_be_switched_off_and_then_glibc_mmaps_large_blocks():
    assert _probe(DIFFUSION_CHAT_NO_MALLOC_TUNING="1") == {"tuned": False, "new_mmaps": 1}
