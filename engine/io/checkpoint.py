"""Finding a checkpoint and reading its files: the folder (local or from the Hub), config, generation config,
and which safetensors files hold its weights. Reading the weights into MLX is `engine.io.weights`.

Knows nothing about any model family, and needs no MLX: the demo trainer reads tokenizers through it on machines
that have PyTorch and no MLX (scripts/demo/train_gpu.sh).

Nothing here ever imports or runs Python that ships inside a checkpoint (LLaDA-2 repos carry
remote code; we only read JSON and tensors).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import CheckpointError

# (downloaded_bytes, total_bytes or None, description)
# progress(done, total or None, description, stage="download"): see engine.events.LoadProgress
ProgressCallback = Callable[..., None]

_HUB_PATTERNS = ["*.json", "*.safetensors", "*.jinja", "tokenizer*", "*.model", "*.txt"]


@dataclass
class CheckpointFiles:
    path: Path
    config: dict
    generation_config: dict


def resolve(model: str | os.PathLike, progress: ProgressCallback | None = None, cancel=None) -> Path:
    """A local folder, or a Hugging Face Hub id downloaded into (or found in) the shared HF cache.

    `HF_HUB_OFFLINE=1` is respected: then only the cache is consulted.
    """
    text = str(model).strip()
    if not text:
        raise CheckpointError("no model given: pass --model with a folder or a Hugging Face id")
    path = Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise CheckpointError(f"{path} is a file; --model needs a checkpoint folder (with config.json)")
        return path
    if text.startswith((".", "/", "~")) or text.count("/") != 1 or os.sep == "\\" and "\\" in text:
        raise CheckpointError(f"model folder not found: {path}")
    return _download(text, progress, cancel)


def _download(repo_id: str, progress: ProgressCallback | None, cancel) -> Path:
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError, RepositoryNotFoundError
    except ImportError:  # pragma: no cover - dependency is declared
        raise CheckpointError("huggingface-hub is not installed; pass a local folder instead")
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    kwargs = dict(allow_patterns=_HUB_PATTERNS, local_files_only=offline)
    if progress is not None:
        kwargs["tqdm_class"] = _progress_tqdm(progress, cancel)
    try:
        return Path(snapshot_download(repo_id, **kwargs))
    except DownloadCancelled:
        raise CheckpointError(f"download of {repo_id} cancelled")
    except LocalEntryNotFoundError:
        if offline:
            raise CheckpointError(f"{repo_id} is not in the Hugging Face cache and HF_HUB_OFFLINE is set")
        raise CheckpointError(f"cannot download {repo_id}: no network connection?")
    except RepositoryNotFoundError:
        raise CheckpointError(f"no such model on the Hugging Face Hub (or it is gated/private): {repo_id}")
    except Exception as exc:  # network errors come in many types
        raise CheckpointError(f"cannot download {repo_id}: {exc}".splitlines()[0])


class DownloadCancelled(Exception):
    pass


def _progress_tqdm(progress: ProgressCallback, cancel):
    """A minimal tqdm stand-in that forwards byte counts to `progress` and honours `cancel`."""
    from tqdm.auto import tqdm as base

    class _Progress(base):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = False
            kwargs["file"] = open(os.devnull, "w")
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            if cancel is not None and cancel.is_set():
                raise DownloadCancelled()
            result = super().update(n)
            if self.unit == "B":
                progress(int(self.n), int(self.total) if self.total else None, str(self.desc or ""))
            return result

    return _Progress


def read_json(path: Path, what: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise CheckpointError(f"{what} not found: {path}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path.name} is not valid JSON ({exc})")
    if not isinstance(data, dict):
        raise CheckpointError(f"{path.name} must hold a JSON object")
    return data


def read_configs(path: Path) -> CheckpointFiles:
    config = read_json(path / "config.json", "config.json")
    generation = {}
    if (path / "generation_config.json").exists():
        generation = read_json(path / "generation_config.json", "generation_config.json")
    elif isinstance(config.get("generation_config"), dict):
        # mlx-vlm conversions merge the generation config into config.json
        generation = dict(config["generation_config"])
    return CheckpointFiles(path=path, config=config, generation_config=generation)


def weight_files(path: Path) -> list[Path]:
    """The safetensors files of a checkpoint: from the index if there is one, else every *.safetensors."""
    index = path / "model.safetensors.index.json"
    if index.exists():
        weight_map = read_json(index, "model.safetensors.index.json").get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise CheckpointError(f"{index.name} has no weight_map")
        names = sorted(set(weight_map.values()))
        missing = [n for n in names if not (path / n).exists()]
        if missing:
            raise CheckpointError(
                f"missing weight shard {missing[0]} (listed in {index.name}); the download is incomplete"
            )
        return [path / n for n in names]
    files = sorted(p for p in path.glob("*.safetensors") if p.name != "consolidated.safetensors")
    if not files:
        raise CheckpointError(f"no *.safetensors weights in {path}")
    return files
