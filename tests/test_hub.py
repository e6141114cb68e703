"""Hub ids resolve through the shared Hugging Face cache; HF_HUB_OFFLINE keeps it offline (no network in tests)."""

from __future__ import annotations

import shutil

import pytest

import engine
from engine.io.checkpoint import resolve

from conftest import CHECKPOINTS

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """A Hugging Face cache holding `tiny/diffusion-gemma` (a copy of the text fixture), offline."""
    cache = tmp_path / "hub"
    repo = cache / "models--tiny--diffusion-gemma"
    shutil.copytree(CHECKPOINTS / "dg_text", repo / "snapshots" / COMMIT)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def test_hub_id_found_in_cache_offline(hub_cache):
    path = resolve("tiny/diffusion-gemma")
    assert path.name == COMMIT and (path / "config.json").exists()
    model = engine.load("tiny/diffusion-gemma")
    assert model.name == "tiny/diffusion-gemma" and model.family == "diffusion_gemma"


def test_uncached_hub_id_offline_is_one_clear_error(hub_cache):
    with pytest.raises(engine.CheckpointError, match="not in the Hugging Face cache and HF_HUB_OFFLINE is set"):
        resolve("tiny/not-downloaded")


@pytest.mark.parametrize("text", ["", "   ", "./missing-folder", "/abs/missing", "a/b/c"])
def test_things_that_are_neither_folder_nor_hub_id(text):
    with pytest.raises(engine.CheckpointError):
        resolve(text)


def test_a_file_is_not_a_checkpoint(tmp_path):
    file = tmp_path / "model.safetensors"
    file.write_bytes(b"")
    with pytest.raises(engine.CheckpointError, match="needs a checkpoint folder"):
        resolve(str(file))


def test_download_progress_is_reported_and_cancellable():
    import threading

    from engine.io.checkpoint import DownloadCancelled, _progress_tqdm

    seen = []
    cancel = threading.Event()
    bar_class = _progress_tqdm(lambda done, total, name: seen.append((done, total, name)), cancel)
    bar = bar_class(total=1000, unit="B", desc="model.safetensors")
    bar.update(400)
    bar.update(300)
    assert seen == [(400, 1000, "model.safetensors"), (700, 1000, "model.safetensors")]
    cancel.set()
    with pytest.raises(DownloadCancelled):
        bar.update(300)
