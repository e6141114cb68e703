"""Shared test helpers: where the fixtures live, and networks loaded once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine

engine.prepare_process()  # first, as the entry points do: it loads OpenBLAS before anything imports MLX

FIXTURES = Path(__file__).parent / "fixtures"
CHECKPOINTS = FIXTURES / "checkpoints"
GOLDEN = FIXTURES / "golden"


@pytest.fixture(scope="session")
def load_network():
    """`load_network("dg_text")` -> (config, network) for a fixture checkpoint, built once per session.

    Goes through `engine.io.loader.build_network`, the same path `engine.load` takes for the weights."""
    from engine.io.checkpoint import read_configs
    from engine.io.loader import build_network

    loaded: dict[str, tuple] = {}

    def load(name: str):
        if name not in loaded:
            _, config, network = build_network(read_configs(CHECKPOINTS / name))
            loaded[name] = (config, network)
        return loaded[name]

    return load


def _host_path_available() -> bool:
    """The CPU-only host path can run in this process: MLX on the CPU and DIFFUSION_CHAT_HOST_OPS not 0."""
    from engine.cpu import device

    return device.host_path()


def pytest_runtest_setup(item):
    # Tests of the host (CPU-only) implementations themselves skip where that path is off: a GPU, or a run with
    # DIFFUSION_CHAT_HOST_OPS=0. The rest of the suite runs either way.
    if item.get_closest_marker("cpu_host") and not _host_path_available():
        pytest.skip("the host path is off (not the CPU backend, or DIFFUSION_CHAT_HOST_OPS=0)")


@pytest.fixture(params=["host", "mlx"])
def both_paths(request, monkeypatch):
    """Runs a test on the host path and on the pure-MLX path (the one Metal and CUDA run; here MLX's CPU backend
    with the host path off). Network goldens and trajectory replays use it (`pytestmark`), so both paths are
    checked in every run. "host" skips where the host path cannot run."""
    from engine.cpu import switch

    if request.param == "host":
        if not _host_path_available():
            pytest.skip("the host path is off (not the CPU backend, or DIFFUSION_CHAT_HOST_OPS=0)")
    else:
        monkeypatch.setenv(switch.ENV, "0")
    return request.param
