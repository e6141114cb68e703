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

from ..events import BlockCommitted, ModelInfo, Started, Stats, Step
from ..images.budget import ImageBudget

VERSION = 1
FRAME_KEY = "diffusion_frame"
STARTED_KEY = "diffusion_started"
BLOCK_KEY = "diffusion_block"
STATS_KEY = "diffusion_stats"
MODEL_KEY = "diffusion_chat"
SCORE_DECIMALS = 4


# What one frame from a server may hold: everything off the wire is untrusted, so sizes and ranges are
# checked before anything is allocated from them. A block of the supported models is 32..256 positions; no
# vocabulary has a million ids; a token's text is a few characters (longer ones are cut: they are drawn only).
MAX_POSITIONS = 4096
MAX_TOKEN_ID = 1 << 20
MAX_TOKEN_TEXT = 64
MAX_COUNT = 1 << 40            # blocks, steps, token counts, bytes
MAX_BLOCKS = 1 << 16           # blocks of one answer
MAX_LABEL = 200


class WireError(ValueError):
    """An extension object that does not have the documented shape."""


def whole(value: Any, name: str, low: int = 0, high: int = MAX_COUNT) -> int:
    """An int (a JSON integer, never a bool, a float or a string) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireError(f"{name} must be an integer, not {_shown(value)}")
    if not low <= value <= high:
        raise WireError(f"{name} must be in {low}..{high}, not {_shown(value)}")
    return value


def number(value: Any, name: str, low: float = -1e12, high: float = 1e12) -> float:
    """A finite JSON number in [low, high] as a float (1e400 arrives as infinity and is refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WireError(f"{name} must be a number, not {_shown(value)}")
    if not (isinstance(value, float) and math.isfinite(value) or isinstance(value, int)) or not low <= value <= high:
        raise WireError(f"{name} must be a finite number in {low:g}..{high:g}, not {_shown(value)}")
    return float(value)


def bounded_list(value: Any, name: str, limit: int) -> list:
    if not isinstance(value, list):
        raise WireError(f"{name} must be a list, not {_shown(value)}")
    if len(value) > limit:
        raise WireError(f"{name} has {len(value)} entries (at most {limit})")
    return value


def _ids(value: Any, name: str) -> np.ndarray:
    items = bounded_list(value, name, MAX_POSITIONS)
    for item in items:
        whole(item, f"a token id in {name}", 0, MAX_TOKEN_ID - 1)
    return np.asarray(items, dtype=np.int32).reshape(len(items))


def _texts(value: Any, allowed: set[int]) -> dict[int, str]:
    if not isinstance(value, dict) or len(value) > len(allowed):
        raise WireError("a diffusion_frame's texts must map each of its token ids to a text")
    texts = {}
    for key, text in value.items():
        if not (isinstance(key, str) and key.isdigit() and len(key) <= 7 and int(key) in allowed):
            raise WireError(f"a diffusion_frame's texts has a key that is none of its token ids: {_shown(key)}")
        if not isinstance(text, str):
            raise WireError(f"the text of token {key} is not a string")
        texts[int(key)] = text[:MAX_TOKEN_TEXT]
    return texts


def _shown(value: Any) -> str:
    if isinstance(value, int) and abs(value) >= 10**30:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


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
    if not isinstance(data, dict):
        raise WireError("a diffusion_frame must be an object")
    try:
        canvas, candidates = _ids(data["canvas"], "canvas"), _ids(data["candidates"], "candidates")
        accepted = bounded_list(data["accepted"], "accepted", MAX_POSITIONS)
        scores = bounded_list(data["scores"], "scores", MAX_POSITIONS)
        if not len(canvas) == len(candidates) == len(accepted) == len(scores):
            raise WireError("a diffusion_frame's arrays must be flat and of one length")
        if not all(isinstance(a, bool) for a in accepted):
            raise WireError("a diffusion_frame's accepted must be booleans")
        scores = np.asarray([np.nan if s is None else number(s, "a score", -1e6, 1e6) for s in scores],
                            dtype=np.float32).reshape(len(scores))
        texts = _texts(data["texts"], {*canvas.tolist(), *candidates.tolist()})
        if data["score_kind"] not in ("entropy", "confidence"):
            raise WireError(f"unknown score_kind {_shown(data['score_kind'])}")
        temperature = data.get("temperature")
        max_steps = whole(data["max_steps"], "max_steps", 1)
        step = Step(
            block=whole(data["block"], "block", 0, MAX_BLOCKS - 1), step=whole(data["step"], "step", 0, max_steps),
            max_steps=max_steps, canvas=canvas, candidates=candidates, accepted=np.asarray(accepted, dtype=bool),
            newly_accepted=whole(data["newly_accepted"], "newly_accepted", 0, len(canvas)), scores=scores,
            score_kind=data["score_kind"],
            temperature=None if temperature is None else number(temperature, "temperature", 0.0, 1e6),
            noise_is_mask=bool(data["noise_is_mask"]),
            prompt_positions=whole(data.get("prompt_positions", 0), "prompt_positions", 0, len(canvas)))
    except KeyError as exc:
        raise WireError(f"a diffusion_frame lacks {exc}") from None
    return step, texts


# ---- started, blocks, stats ----------------------------------------------------------------------------


def encode_started(started: Started) -> dict:
    return {"prompt_tokens": started.prompt_tokens, "encoded_tokens": started.encoded_tokens,
            "prefill_s": round(started.prefill_s, 6), "block_length": started.block_length}


def decode_started(data: Any) -> Started:
    try:
        return Started(whole(data["prompt_tokens"], "prompt_tokens"), whole(data["encoded_tokens"], "encoded_tokens"),
                       number(data["prefill_s"], "prefill_s", 0.0), whole(data["block_length"], "block_length", 1,
                                                                           MAX_POSITIONS))
    except (KeyError, TypeError) as exc:
        raise WireError(f"malformed diffusion_started ({exc})") from None


def encode_block(block: BlockCommitted) -> dict:
    return {"block": block.block, "token_ids": list(block.token_ids), "steps": block.steps,
            "stop_reason": block.stop_reason, "accepted_per_step": list(block.accepted_per_step),
            "edits": block.edits}


def decode_block(data: Any, content: str, reasoning: str) -> BlockCommitted:
    """The block whose text arrived in the same chunk (`committed` is not sent: it equals `token_ids` here).
    `accepted_per_step` and `edits` are optional: a diffusion-chat server from before they were sent omits them
    (the block then has no per-step curve)."""
    try:
        ids = tuple(_ids(data["token_ids"], "token_ids").tolist())
        if not isinstance(data["stop_reason"], str) or len(data["stop_reason"]) > MAX_LABEL:
            raise WireError("a diffusion_block's stop_reason must be a short string")
        steps = whole(data["steps"], "steps")
        accepted = tuple(whole(n, "accepted_per_step", 0, MAX_POSITIONS)
                         for n in bounded_list(data.get("accepted_per_step") or [], "accepted_per_step", MAX_POSITIONS))
        return BlockCommitted(block=whole(data["block"], "block", 0, MAX_BLOCKS - 1), token_ids=ids, committed=ids,
                              content_delta=content, reasoning_delta=reasoning, steps=steps,
                              stop_reason=data["stop_reason"], accepted_per_step=accepted,
                              edits=whole(data.get("edits") or 0, "edits"))
    except (KeyError, TypeError) as exc:
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
        steps = bounded_list(data["steps_per_block"], "steps_per_block", MAX_BLOCKS)
        stats = Stats(steps_per_block=tuple(whole(s, "steps_per_block") for s in steps),
                      prompt_tokens=whole(data["prompt_tokens"], "prompt_tokens"),
                      generated_tokens=whole(data["generated_tokens"], "generated_tokens"),
                      work_tokens=whole(data["work_tokens"], "work_tokens"),
                      prefill_s=number(data["prefill_s"], "prefill_s", 0.0),
                      denoise_s=number(data["denoise_s"], "denoise_s", 0.0),
                      total_s=number(data["total_s"], "total_s", 0.0),
                      peak_memory_bytes=whole(data.get("peak_memory_bytes", 0), "peak_memory_bytes"))
        if data["finish_reason"] not in ("stop", "length", "cancelled"):
            raise WireError(f"unknown finish_reason {_shown(data['finish_reason'])}")
        return stats, data["finish_reason"]
    except (KeyError, TypeError) as exc:
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
        context_length = data.get("context_length")
        settings = bounded_list(data["settings"], "settings", 64)
        if not all(isinstance(name, str) and len(name) <= MAX_LABEL for name in settings):
            raise WireError("settings must be setting names")
        return ModelInfo(
            name=name, family=_label(data["family"], "family"), label=_label(data["label"], "label"),
            supports_images=bool(data["supports_images"]), setting_defaults=_defaults(data["setting_defaults"]),
            token_texts=token_texts,
            image_budget=None if not budget else ImageBudget(whole(budget["max_soft_tokens"], "max_soft_tokens", 1,
                                                                   1 << 20),
                                                             whole(budget["patch_size"], "patch_size", 1, 1 << 10),
                                                             whole(budget["pooling_kernel_size"],
                                                                   "pooling_kernel_size", 1, 1 << 10)),
            context_length=None if context_length is None else whole(context_length, "context_length", 1, 1 << 31),
            remote=True, frames=bool(data.get("frames")), offered_settings=tuple(settings),
            thinking=bool(data.get("thinking", True)))
    except (KeyError, TypeError) as exc:
        raise WireError(f"malformed {MODEL_KEY} model description ({exc})") from None


def _label(value: Any, name: str) -> str:
    if not isinstance(value, str) or len(value) > MAX_LABEL:
        raise WireError(f"{name} must be a string of at most {MAX_LABEL} characters")
    return value


def _defaults(value: Any) -> dict:
    """The checkpoint's setting defaults: a few names, each a short plain value the sampler panel can show."""
    if not isinstance(value, dict) or len(value) > 64:
        raise WireError("setting_defaults must be an object of at most 64 settings")
    for key, item in value.items():
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            number(item, f"the default of {_shown(key)}")
        elif not (item is None or isinstance(item, bool) or isinstance(item, str) and len(item) <= MAX_LABEL):
            raise WireError(f"the default of {_shown(key)} is not a plain value")
    return dict(value)
