"""engine.cpu.malloc: once a process is prepared (`engine.prepare_process()`, what the entry points call), large
allocations come from the heap instead of fresh mmaps (whose page faults dominated a real-vocabulary step), also
on a thread started later that allocated before loading its model (the app's engine thread); an unprepared
process keeps glibc's defaults. Each check runs in a fresh interpreter: the tuning is process-wide and stays."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from malloc_probe import MALLINFO, run_probe

CHECKPOINT = Path(__file__).resolve().parent / "fixtures" / "checkpoints" / "dg_text"

# Counts glibc's fresh mmaps around a 64 MiB malloc/free, on a thread that allocated before loading a model, as
# the app's engine thread does.
PROBE = """
import json, sys, threading
import engine
if sys.argv[1] == "prepared":
    engine.prepare_process()
""" + MALLINFO + f"""
result = {{}}

def engine_thread():
    early = [bytearray(1 << 16) for _ in range(8)]   # this thread's first mallocs pick its arena
    engine.load({str(CHECKPOINT)!r})
    result["new_mmaps"] = new_mmaps_for_64_mib()

thread = threading.Thread(target=engine_thread)
thread.start()
thread.join()
print(json.dumps(result))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is a Linux matter")
def test_in_a_prepared_process_large_blocks_stay_in_the_heap_even_on_a_later_thread():
    assert run_probe(PROBE, "prepared") == {"new_mmaps": 0}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is a Linux matter")
def test_without_prepare_process_glibc_mmaps_large_blocks_as_usual():
    assert run_probe(PROBE, "plain") == {"new_mmaps": 1}


TRIM_PROBE = """
import json
import engine
from engine.cpu import malloc
engine.prepare_process()
""" + MALLINFO + """
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
    report = run_probe(TRIM_PROBE)
    assert report["released"] and report["freed_mib"] >= 200


def test_a_model_load_releases_the_memory_it_freed(monkeypatch):
    import engine
    from engine.cpu import device

    calls = []
    monkeypatch.setattr(device.malloc, "release_free_memory", lambda: calls.append(True) or True)
    engine.load(str(CHECKPOINT))
    assert calls == [True]
