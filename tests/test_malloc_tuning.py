"""engine._malloc: once `engine` is imported, large allocations come from the heap instead of fresh mmaps
(whose page faults dominated a real-vocabulary step), also on a thread started later that allocated before
loading its model (the app's engine thread), and the switch can be turned off. Each check runs in a fresh
interpreter: the tuning is process-wide and, once made, stays."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT = ROOT / "tests" / "fixtures" / "checkpoints" / "dg_text"

# Counts glibc's mmapped blocks (mallinfo2().hblks) around a 64 MiB malloc/free, on a thread that allocated
# before loading a model, as the app's engine thread does.
PROBE = f"""
import ctypes, json, threading
import engine
from engine import _malloc

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
result = {{}}

def engine_thread():
    early = [bytearray(1 << 16) for _ in range(8)]   # this thread's first mallocs pick its arena
    engine.load({str(CHECKPOINT)!r})
    before = libc.mallinfo2().hblks
    block = libc.malloc(64 << 20)
    result["new_mmaps"] = libc.mallinfo2().hblks - before
    libc.free(block)

thread = threading.Thread(target=engine_thread)
thread.start()
thread.join()
print(json.dumps({{"tuned": _malloc.keep_large_allocations(), **result}}))
"""


def _probe(**env) -> dict:
    import os

    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is a Linux matter")
def test_after_import_engine_large_blocks_stay_in_the_heap_even_on_a_later_thread():
    assert _probe() == {"tuned": True, "new_mmaps": 0}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is a Linux matter")
def test_the_tuning_can_be_switched_off_and_then_glibc_mmaps_large_blocks():
    assert _probe(DIFFUSION_CHAT_NO_MALLOC_TUNING="1") == {"tuned": False, "new_mmaps": 1}


TRIM_PROBE = """
import ctypes, json
import engine
from engine import _malloc

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)

def resident_mib():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 >> 20

block = libc.malloc(256 << 20)
ctypes.memset(block, 1, 256 << 20)
pin = libc.malloc(1 << 20)                      # a live block above it: the heap's top cannot shrink
ctypes.memset(pin, 1, 1 << 20)
libc.free(block)
kept = resident_mib()
released = _malloc.release_free_memory()
print(json.dumps({"released": released, "freed_mib": kept - resident_mib()}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is a Linux matter")
def test_memory_freed_below_a_live_block_goes_back_to_the_kernel_when_released():
    result = subprocess.run([sys.executable, "-c", TRIM_PROBE], capture_output=True, text=True, cwd=ROOT,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["released"] and report["freed_mib"] >= 200


def test_a_model_load_releases_the_memory_it_freed(monkeypatch):
    import engine
    from engine import loader

    calls = []
    monkeypatch.setattr(loader._malloc, "release_free_memory", lambda: calls.append(True) or True)
    engine.load(str(CHECKPOINT))
    assert calls == [True]
