"""Damaged weights (NaN, +Inf) are caught at the first step of a block with one clear error, in both families;
the engine thread reports it as a failed generation and keeps serving."""

from __future__ import annotations

import shutil
import threading

import mlx.core as mx
import numpy as np
import pytest

import engine
from conftest import CHECKPOINTS
from engine.errors import NonFiniteOutput
from engine.events import Finished, GenerationFailed, GenerationRequest, GenerationUpdate, ModelLoaded
from engine.generation.sampling import select_transfer
from engine.settings import Settings
from engine.thread.worker import EngineWorker

MESSAGE = "the model produced NaN/Inf; the weights may be damaged"
EMBEDDINGS = {"dg_text": "model.decoder.embed_tokens.weight", "llada2": "model.word_embeddings.weight"}


def damaged_copy(tmp_path, name: str, how: str):
    """A fixture copy whose weights are all NaN ("nan") or whose embedding table is +Inf ("inf")."""
    folder = tmp_path / f"{name}-{how}"
    shutil.copytree(CHECKPOINTS / name, folder)
    weights = mx.load(str(folder / "model.safetensors"))
    if how == "nan":
        weights = {k: mx.full(v.shape, mx.nan, v.dtype) for k, v in weights.items()}
    else:
        weights[EMBEDDINGS[name]] = mx.full(weights[EMBEDDINGS[name]].shape, mx.inf, mx.float32)
    mx.save_safetensors(str(folder / "model.safetensors"), weights, metadata={"format": "mlx"})
    return folder


@pytest.mark.parametrize("how", ["nan", "inf"])
@pytest.mark.parametrize("name", ["dg_text", "llada2"])
def test_damaged_weights_raise_one_clear_error(tmp_path, name, how):
    model = engine.load(damaged_copy(tmp_path, name, how))
    with pytest.raises(NonFiniteOutput, match=MESSAGE.replace("/", ".")):
        list(engine.generate(model, messages=[{"role": "user", "content": "hi"}], settings=Settings(max_tokens=8)))


@pytest.mark.parametrize("name", ["dg_text", "llada2"])
def test_the_cli_prints_the_line_and_no_traceback(tmp_path, capsys, name):
    from tui.cli import main

    code = main(["generate", "--model", str(damaged_copy(tmp_path, name, "nan")), "--prompt", "hi"])
    assert code == 1 and capsys.readouterr().err.strip() == f"diffusion-chat: error: {MESSAGE}"


def test_the_worker_reports_it_and_keeps_serving(tmp_path):
    events, done = [], threading.Event()

    def notify(event):
        events.append(event)
        if isinstance(event, (GenerationFailed, ModelLoaded)) or (
                isinstance(event, GenerationUpdate) and isinstance(event.event, Finished)):
            done.set()

    worker = EngineWorker(notify).start()
    request = GenerationRequest(({"role": "user", "content": "hi"},), Settings(max_tokens=8, max_denoising_steps=2))
    try:
        for model in (damaged_copy(tmp_path, "llada2", "inf"), CHECKPOINTS / "llada2"):
            done.clear()
            worker.load_model(str(model))
            assert done.wait(60)
            done.clear()
            worker.generate(request)
            assert done.wait(60)
    finally:
        worker.close()
    failed = [e for e in events if isinstance(e, GenerationFailed)]
    assert [e.message for e in failed] == [MESSAGE]
    assert isinstance(events[-1], GenerationUpdate) and isinstance(events[-1].event, Finished)


def test_nan_confidences_still_fill_the_quota_and_never_pick_committed_positions():
    confidence = np.array([np.nan, -np.inf, 0.3, np.nan, -np.inf], dtype=np.float32)
    chosen = select_transfer(confidence, quota=2, threshold=0.9)
    assert chosen.tolist() == [True, False, True, False, False]
    assert select_transfer(confidence, quota=5, threshold=0.9).tolist() == [True, False, True, True, False]
