"""Shared test helpers: where the fixtures live, and networks loaded once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine  # noqa: F401  (imported first, as the app does: it loads OpenBLAS before MLX on Linux)

FIXTURES = Path(__file__).parent / "fixtures"
CHECKPOINTS = FIXTURES / "checkpoints"
GOLDEN = FIXTURES / "golden"


@pytest.fixture(scope="session")
def load_network():
    """`load_network("dg_text")` -> (config, network) for a fixture checkpoint, built once per session.

    Goes through `engine.loader.build_network`, the same path `engine.load` takes for the weights."""
    from engine.checkpoint import read_configs
    from engine.loader import build_network

    loaded: dict[str, tuple] = {}

    def load(name: str):
        if name not in loaded:
            _, config, network = build_network(read_configs(CHECKPOINTS / name))
            loaded[name] = (config, network)
        return loaded[name]

    return load
