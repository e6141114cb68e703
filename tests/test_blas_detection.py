"""Which BLAS serves MLX is read with threadpoolctl, whoever loaded it; NumPy's own is pinned to one thread."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine.cpu import blas as _blas

# threadpoolctl's records, as `threadpool_info()` gives them
LIBRARIES = [
    {"user_api": "blas", "internal_api": "openblas", "prefix": "libscipy_openblas", "num_threads": 2,
     "filepath": "/venv/lib/python3.11/site-packages/numpy.libs/libscipy_openblas64_-ff651d7f.so"},
    {"user_api": "blas", "internal_api": "openblas", "prefix": "libopenblas", "num_threads": 2,
     "filepath": "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so"},
    {"user_api": "openmp", "internal_api": "openmp", "prefix": "libgomp", "num_threads": 2,
     "filepath": "/usr/lib/x86_64-linux-gnu/libgomp.so.1"},
]


def test_a_system_openblas_is_found():
    assert _blas.system_openblas(LIBRARIES).endswith("libopenblasp-r0.3.21.so")


def test_numpys_bundled_openblas_does_not_count():
    without = [library for library in LIBRARIES if "openblas-pthread" not in library["filepath"]]
    assert _blas.system_openblas(without) is None
    old_wheel = {**LIBRARIES[0], "prefix": "libopenblas",
                 "filepath": "/venv/lib/python3.11/site-packages/numpy.libs/libopenblas64_p-r0-2f7c42d4.3.18.so"}
    assert _blas.system_openblas([old_wheel]) is None   # older NumPy wheels: unprefixed name, numpy.libs folder


def _system_openblas() -> str | None:
    for path in _blas._CANDIDATES:
        path = path.format(arch=os.uname().machine)
        if os.path.exists(path):
            return path
    return None


@pytest.mark.skipif(not sys.platform.startswith("linux") or _system_openblas() is None,
                    reason="needs a Linux system OpenBLAS to preload")
def test_openblas_preloaded_before_mlx_is_seen():
    # A Python user who imports mlx before engine, with OpenBLAS from LD_PRELOAD: the engine did not load it,
    # but MLX's matmuls run on it, and the slow-BLAS notice must stay quiet.
    code = "import mlx.core; import engine.cpu.blas as b; print(b.prefer_openblas(), b.describe() != b.REFERENCE_BLAS)"
    env = {**os.environ, "LD_PRELOAD": _system_openblas()}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "True"]


@pytest.mark.cpu_host
def test_host_ops_put_numpys_bundled_openblas_on_one_thread():
    # Where NumPy bundles an OpenBLAS (pip wheels), the first host op sets it to one thread: two spinning pools
    # on the same cores starve each other (engine/cpu/blas.py). Checked through threadpoolctl's own reading.
    import mlx.core as mx
    from threadpoolctl import threadpool_info

    from engine.models import ops

    ops.geglu(mx.ones((2, 4)), mx.ones((2, 4)))
    numpys = [library for library in threadpool_info()
              if library["internal_api"] == "openblas" and _blas._numpys_own(library["filepath"])]
    if not numpys:
        assert _blas.single_thread_numpy_blas() is False
        return
    assert [library["num_threads"] for library in numpys] == [1] * len(numpys)


@pytest.fixture
def seen(monkeypatch) -> list:
    """The OPENBLAS_THREAD_TIMEOUT each (stand-in) library load saw."""
    loads = []
    monkeypatch.setattr(_blas.ctypes, "CDLL", lambda path, mode=0: loads.append(os.environ.get("OPENBLAS_THREAD_TIMEOUT")))
    return loads


def test_openblas_is_loaded_with_a_short_thread_timeout_that_does_not_leak(seen, monkeypatch):
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    assert _blas._load_with_thread_timeout("/lib/libopenblas.so.0") == _blas.THREAD_TIMEOUT
    # OpenBLAS reads it while loading; afterwards the environment (and so every child process) is as it was.
    assert seen == [_blas.THREAD_TIMEOUT] and "OPENBLAS_THREAD_TIMEOUT" not in os.environ


def test_a_thread_timeout_the_user_set_is_kept(seen, monkeypatch):
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "26")
    assert _blas._load_with_thread_timeout("/lib/libopenblas.so.0") == "26"
    assert seen == ["26"] and os.environ["OPENBLAS_THREAD_TIMEOUT"] == "26"


def test_a_failed_load_still_puts_the_environment_back(monkeypatch):
    def refuse(path, mode=0):
        raise OSError("not a library")

    monkeypatch.setattr(_blas.ctypes, "CDLL", refuse)
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    with pytest.raises(OSError):
        _blas._load_with_thread_timeout("/lib/libopenblas.so.0")
    assert "OPENBLAS_THREAD_TIMEOUT" not in os.environ
