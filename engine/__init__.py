"""diffusion-chat's MLX engine for block-diffusion language models.

Public API:
    model = engine.load("path/or/hub-id")
    for event in engine.generate(model, messages=[{"role": "user", "content": "Hi"}], settings=engine.Settings()):
        ...

The engine never imports the UI (Textual); events are plain data (engine.events).
"""

from ._blas import prefer_openblas

prefer_openblas()  # before anything imports MLX

from .errors import CheckpointError, EngineError, InputError, SettingsError
from .events import BlockCommitted, Event, Finished, Started, Stats, Step
from .generate import generate
from .loader import Model, load
from .randomness import Randomness, SeededRandomness
from .session import Session
from .settings import Settings

__all__ = [
    "BlockCommitted", "CheckpointError", "EngineError", "Event", "Finished", "InputError", "Model",
    "Randomness", "SeededRandomness", "Session", "Settings", "SettingsError", "Started", "Stats", "Step",
    "generate", "load",
]
