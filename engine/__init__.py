"""diffusion-chat's MLX engine for block-diffusion language models.

Public API:
    model = engine.load("path/or/hub-id")
    for event in engine.generate(model, messages=[{"role": "user", "content": "Hi"}], settings=engine.Settings()):
        ...

The engine never imports the UI (Textual); events are plain data (engine.events). Names are imported on first
use (PEP 562), so `engine.settings`, `engine.errors`, `engine.events` and `engine.models.families` load without MLX.
Packages: `io` (checkpoints, `load`, the tokenizer, bounded JSON), `images`, `generation` (the entry point
`generate`, the block loop, fills, randomness, the answer's text, prefix reuse), `recording` (trajectories),
`models` (the networks and the family registry), `cpu` (the host path), `thread` (the engine thread), `serve`
(the HTTP server and its wire format) and `cli` (the headless commands). Three plain-data modules stay at the
root because every caller imports them: `errors`, `events` and `settings`.
Importing `engine` changes nothing in the process: a program that runs a model here calls
`engine.prepare_process()` first (the system OpenBLAS and malloc tuning for MLX's CPU backend, engine.cpu).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "CheckpointError": "errors", "EngineError": "errors", "InputError": "errors", "SettingsError": "errors",
    "BlockCommitted": "events", "Event": "events", "Finished": "events", "Started": "events", "Stats": "events",
    "Step": "events",
    "generate": "generation.api",
    "Model": "io.loader", "load": "io.loader",
    "Randomness": "generation.randomness", "SeededRandomness": "generation.randomness",
    "Session": "generation.session",
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
