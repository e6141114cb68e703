"""diffusion-chat's MLX engine for block-diffusion language models.

Public API:
    model = engine.load("path/or/hub-id")
    for event in engine.generate(model, messages=[{"role": "user", "content": "Hi"}], settings=engine.Settings()):
        ...

The engine never imports the UI (Textual); events are plain data (engine.events). Names are imported on first
use (PEP 562), so `engine.settings`, `engine.errors`, `engine.events` and `engine.families` load without MLX.
Importing `engine` changes nothing in the process: a program that runs a model here calls
`engine.prepare_process()` first (the system OpenBLAS and malloc tuning for MLX's CPU backend, engine.cpu).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "CheckpointError": "errors", "EngineError": "errors", "InputError": "errors", "SettingsError": "errors",
    "BlockCommitted": "events", "Event": "events", "Finished": "events", "Started": "events", "Stats": "events",
    "Step": "events",
    "generate": "api",
    "Model": "loader", "load": "loader",
    "Randomness": "randomness", "SeededRandomness": "randomness",
    "Session": "session",
    "Settings": "settings",
    "prepare_process": "cpu",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value
