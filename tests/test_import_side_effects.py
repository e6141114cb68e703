"""`import engine` and `import tui.config` change nothing in the process: no OpenBLAS mapped, no MLX imported, glibc's
malloc at its defaults (a 64 MiB block still gets its own mmap). Only `engine.prepare_process()`, which the entry
points that run a local model call, loads OpenBLAS and tunes malloc. Each check runs in a fresh interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from malloc_probe import MALLINFO, run_probe

PROBE = """
import json, os, sys
import engine, tui.config
if sys.argv[1] == "prepared":
    engine.prepare_process()
""" + MALLINFO + """
new_mmaps = new_mmaps_for_64_mib()
with open("/proc/self/maps") as maps:
    mapped = sorted({os.path.basename(line.split()[-1]) for line in maps if "openblas" in line.lower()
                     and "scipy_openblas" not in line})
print(json.dumps({"new_mmaps": new_mmaps, "openblas": mapped, "mlx": "mlx.core" in sys.modules,
                  "numpy": "numpy" in sys.modules}))
"""


def _system_openblas() -> bool:
    from engine.cpu import blas

    return any(Path(path.format(arch=__import__("platform").machine())).exists() for path in blas._CANDIDATES)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="OpenBLAS loading and glibc's malloc are Linux matters")
def test_importing_the_engine_and_the_settings_file_changes_nothing():
    assert run_probe(PROBE, "plain") == {"new_mmaps": 1, "openblas": [], "mlx": False, "numpy": False}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="OpenBLAS loading and glibc's malloc are Linux matters")
def test_prepare_process_tunes_malloc_and_maps_the_system_openblas_where_there_is_one():
    report = run_probe(PROBE, "prepared")
    assert report["new_mmaps"] == 0 and not report["mlx"]
    assert bool(report["openblas"]) == _system_openblas()
