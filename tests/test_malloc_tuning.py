"""engine.cpu.malloc: once a process is prepared (`engine.prepare_process()`, what the entry points call), large
allocations come from the heap instead of fresh mmaps (whose page faults dominated a real-vocabulary step), also
on a thread started later that allocated before loading its model (the app's engine thread); an unprepared
process keeps glibc's defaults. Each check runs in a fresh interpreter: the tuning is process-wide and stays."""

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
import ctypes, json, sys, threading
import engine
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
print(json.dumps(result))
"""


def _probe(how: str) -> dict:
    result = subprocess.run([sys.executable, "-c", PROBE, how], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is a Linux matter")
def test_in_a_prepared_process_large_blocks_stay_in_the_heap_even_on_a_later_thread():
    assert _probe("prepared") == {"new_mmaps": 0}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is a Linux matter")
def test_without_prepare_process_glibc_mmaps_large_blocks_as_usual():
    assert _probe("plain") == {"new_mmaps": 1}


TRIM_PROBE = """
import ctypes, json
import engine
from engine.cpu import malloc
engine.prepare_process()

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
released = malloc.release_free_memory()
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
    from engine.cpu import device

    calls = []
    monkeypatch.setattr(device.malloc, "release_free_memory", lambda: calls.append(True) or True)
    engine.load(str(CHECKPOINT))
    assert calls == [True]
