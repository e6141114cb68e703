"""Which BLAS serves MLX is read from the process's mappings, whoever loaded it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine import _blas

MAPS = """\
7f00-7f10 r-xp 00000000 08:01 11 /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so
7f20-7f30 r-xp 00000000 08:01 12 /venv/lib/python3.11/site-packages/mlx_cpu.libs/libblas-bd8a282c.so.3.10.0
7f40-7f50 rw-p 00000000 00:00 0
7f60-7f70 r-xp 00000000 08:01 13 /venv/lib/python3.11/site-packages/numpy.libs/libscipy_openblas64_-ff651d7f.so
"""


def test_an_openblas_mapping_is_found():
    assert _blas.openblas_among(MAPS).endswith("libopenblasp-r0.3.21.so")


def test_numpys_prefixed_openblas_and_the_bundled_blas_do_not_count():
    without = "\n".join(line for line in MAPS.splitlines() if "openblas-pthread" not in line)
    assert _blas.openblas_among(without) is None


def _system_openblas() -> str | None:
    for path in _blas._CANDIDATES:
        path = path.format(arch=os.uname().machine)
        if os.path.exists(path):
            return path
    return None


@pytest.mark.skipif(not sys.platform.startswith("linux") or _system_openblas() is None,
                    reason="needs a Linux system OpenBLAS to preload")
def test_openblas_preloaded_before_mlx_enables_the_per_expert_path():
    # A Python user who imports mlx before engine, with OpenBLAS from LD_PRELOAD: the engine did not load it,
    # but MLX's matmuls run on it, so the per-expert path must be on.
    code = "import mlx.core; import engine._blas as b; print(b.loaded_from, bool(b.openblas_mapped()))"
    env = {**os.environ, "LD_PRELOAD": _system_openblas()}
    env.pop("DIFFUSION_CHAT_NO_OPENBLAS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "True"]


def test_host_ops_put_numpys_bundled_openblas_on_one_thread():
    # Where NumPy bundles an OpenBLAS (pip wheels), the first host op sets it to one thread: two spinning pools
    # on the same cores starve each other (engine/_blas.py). Checked through the library's own getter.
    import ctypes
    import glob
    import os

    import mlx.core as mx
    import numpy

    from engine.models import host_ops

    libraries = glob.glob(os.path.join(os.path.dirname(numpy.__path__[0]), "numpy.libs", "*openblas*.so*"))
    host_ops.geglu(mx.ones((2, 4)), mx.ones((2, 4)))
    if not libraries:
        from engine import _blas

        assert _blas.single_thread_numpy_blas() is False
        return
    library = ctypes.CDLL(libraries[0])
    getter = next(getattr(library, name) for name in ("scipy_openblas_get_num_threads64_",
                                                      "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
                                                      "openblas_get_num_threads") if hasattr(library, name))
    assert getter() == 1


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
