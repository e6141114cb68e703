"""The JSON that `diffusion-chat serve` adds to OpenAI chunks, and its decoding: one module used by both the
server (engine.serve) and the app's remote backend (tui.remote), so the two can never disagree. No MLX.

Every extension is a top-level key of an otherwise ordinary `chat.completion.chunk` whose delta is empty, so
a plain OpenAI client parses it as a no-op chunk and ignores the extra field. They are sent only to a request
that asked for them with `"diffusion_frames": true`:

* `diffusion_frame` — one denoising step (`engine.events.Step`). Token ids AND their texts: `canvas` and
  `candidates` are ids, `texts` maps every id in them (as a decimal string key) to its text, decoded alone,
  so a client without the tokenizer can draw the canvas and one with it can use the ids. Each frame is
  self-contained (no state carried between frames). Scores are rounded to 4 decimals; a non-finite score is
  `null`.
* `diffusion_started` — the prompt was read (`engine.events.Started`).
* `diffusion_block` — the block just committed (`engine.events.BlockCommitted` without `committed`); it rides
  on the chunk carrying the block's text (or on an empty chunk when the block carried none).
* `diffusion_stats` — on the finishing chunk: the engine's own finish reason and timings (`Stats`).

`GET /v1/models` describes the model under `diffusion_chat` (`encode_model` / `decode_model`).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np

from .events import BlockCommitted, ModelInfo, Started, Stats, Step
from .image_budget import ImageBudget

VERSION = 1
FRAME_KEY = "diffusion_frame"
STARTED_KEY = "diffusion_started"
BLOCK_KEY = "diffusion_block"
STATS_KEY = "diffusion_stats"
MODEL_KEY = "diffusion_chat"
SCORE_DECIMALS = 4


class WireError(ValueError):
    """An extension object that does not have the documented shape."""


# ---- frames ------------------------------------------------------------------------------------------


def encode_frame(step: Step, token_text: Callable[[int], str]) -> dict:
    canvas, candidates = step.canvas.tolist(), step.candidates.tolist()
    return {
        "v": VERSION,
        "block": step.block,
        "step": step.step,
        "max_steps": step.max_steps,
        "canvas": canvas,
        "candidates": candidates,
        "texts": {str(i): token_text(i) for i in {*canvas, *candidates}},
        "accepted": [bool(a) for a in step.accepted.tolist()],
        "newly_accepted": step.newly_accepted,
        "scores": [round(s, SCORE_DECIMALS) if math.isfinite(s) else None for s in step.scores.tolist()],
        "score_kind": step.score_kind,
        "temperature": step.temperature,
        "noise_is_mask": step.noise_is_mask,
        "prompt_positions": step.prompt_positions,
    }


def decode_frame(data: Any) -> tuple[Step, dict[int, str]]:
    """A `Step` (with the server's token ids) and the texts of those ids."""
    try:
        canvas = np.asarray(data["canvas"], dtype=np.int32)
        candidates = np.asarray(data["candidates"], dtype=np.int32)
        accepted = np.asarray(data["accepted"], dtype=bool)
        scores = np.asarray([np.nan if s is None else s for s in data["scores"]], dtype=np.float32)
        if not (canvas.ndim == 1 and canvas.shape == candidates.shape == accepted.shape == scores.shape):
            raise WireError("a diffusion_frame's arrays must be flat and of one length")
        texts = {int(key): str(text) for key, text in data["texts"].items()}
        if data["score_kind"] not in ("entropy", "confidence"):
            raise WireError(f"unknown score_kind {data['score_kind']!r}")
        temperature = data.get("temperature")
        step = Step(
            block=int(data["block"]), step=int(data["step"]), max_steps=int(data["max_steps"]), canvas=canvas,
            candidates=candidates, accepted=accepted, newly_accepted=int(data["newly_accepted"]), scores=scores,
            score_kind=data["score_kind"], temperature=None if temperature is None else float(temperature),
            noise_is_mask=bool(data["noise_is_mask"]), prompt_positions=int(data.get("prompt_positions", 0)))
    except WireError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise WireError(f"malformed diffusion_frame ({type(exc).__name__}: {exc})") from None
    return step, texts


# ---- started, blocks, stats ----------------------------------------------------------------------------


def encode_started(started: Started) -> dict:
    return {"prompt_tokens": started.prompt_tokens, "encoded_tokens": started.encoded_tokens,
            "prefill_s": round(started.prefill_s, 6), "block_length": started.block_length}


def decode_started(data: Any) -> Started:
    try:
        return Started(int(data["prompt_tokens"]), int(data["encoded_tokens"]), float(data["prefill_s"]),
                       int(data["block_length"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(f"malformed diffusion_started ({exc})") from None


def encode_block(block: BlockCommitted) -> dict:
    return {"block": block.block, "token_ids": list(block.token_ids), "steps": block.steps,
            "stop_reason": block.stop_reason}


def decode_block(data: Any, content: str, reasoning: str) -> BlockCommitted:
    """The block whose text arrived in the same chunk (`committed` is not sent: it equals `token_ids` here)."""
    try:
        ids = tuple(int(t) for t in data["token_ids"])
        return BlockCommitted(block=int(data["block"]), token_ids=ids, committed=ids, content_delta=content,
                              reasoning_delta=reasoning, steps=int(data["steps"]), stop_reason=data["stop_reason"])
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(f"malformed diffusion_block ({exc})") from None


def encode_stats(stats: Stats, finish_reason: str) -> dict:
    return {"finish_reason": finish_reason, "steps_per_block": list(stats.steps_per_block),
            "prompt_tokens": stats.prompt_tokens, "generated_tokens": stats.generated_tokens,
            "work_tokens": stats.work_tokens, "prefill_s": round(stats.prefill_s, 6),
            "denoise_s": round(stats.denoise_s, 6), "total_s": round(stats.total_s, 6),
            "peak_memory_bytes": stats.peak_memory_bytes}


def decode_stats(data: Any) -> tuple[Stats, str]:
    """The server's `Stats` and the engine's finish reason (`stop`, `length` or `cancelled`)."""
    try:
        stats = Stats(steps_per_block=tuple(int(s) for s in data["steps_per_block"]),
                      prompt_tokens=int(data["prompt_tokens"]), generated_tokens=int(data["generated_tokens"]),
                      work_tokens=int(data["work_tokens"]), prefill_s=float(data["prefill_s"]),
                      denoise_s=float(data["denoise_s"]), total_s=float(data["total_s"]),
                      peak_memory_bytes=int(data.get("peak_memory_bytes", 0)))
        return stats, str(data["finish_reason"])
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(f"malformed diffusion_stats ({exc})") from None


# ---- the model, in GET /v1/models ----------------------------------------------------------------------


def encode_model(info: ModelInfo, settings: list[str]) -> dict:
    """`settings`: the request fields (engine.Settings names) the server takes for this model."""
    budget = info.image_budget
    return {
        "v": VERSION,
        "family": info.family,
        "label": info.label,
        "supports_images": info.supports_images,
        "setting_defaults": dict(info.setting_defaults),
        "settings": list(settings),
        "frames": True,
        "image_budget": None if budget is None else {
            "max_soft_tokens": budget.max_soft_tokens, "patch_size": budget.patch_size,
            "pooling_kernel_size": budget.pooling_kernel_size},
        "context_length": info.context_length,
        "thinking": info.thinking,
    }


def decode_model(name: str, data: Mapping[str, Any], token_texts=()) -> ModelInfo:
    """A remote `ModelInfo`. `token_texts` is the client's table of texts learnt from frames."""
    try:
        budget = data.get("image_budget")
        return ModelInfo(
            name=name, family=str(data["family"]), label=str(data["label"]),
            supports_images=bool(data["supports_images"]), setting_defaults=dict(data["setting_defaults"]),
            token_texts=token_texts,
            image_budget=None if not budget else ImageBudget(int(budget["max_soft_tokens"]),
                                                             int(budget["patch_size"]),
                                                             int(budget["pooling_kernel_size"])),
            context_length=data.get("context_length"), remote=True, frames=bool(data.get("frames")),
            offered_settings=tuple(data["settings"]), thinking=bool(data.get("thinking", True)))
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(f"malformed {MODEL_KEY} model description ({exc})") from None
