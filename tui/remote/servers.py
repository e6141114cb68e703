"""What a server is, from its `GET /v1/models` answer, and what the app may ask of it.

`diffusion-chat serve` describes its model (engine.serve.wire.MODEL_KEY): family, defaults, the settings it takes,
and frames. Any other server is described by guesses, each on purpose:

* the family from the model id (LLaDA-2 if it says "llada", else DiffusionGemma), so the sampler panel and
  the saved settings of that family apply;
* the settings offered per server (`owned_by`): vLLM takes OpenAI's sampling fields; SGLang's dLLM
  algorithms ignore temperature / top-p / top-k and refuse a seed for DiffusionGemma, so only max_tokens is
  offered; anyone else (mlx-vlm, mlxcel, ...) gets OpenAI's fields plus mlx-vlm's per-request diffusion fields
  (the same names as ours), which other servers ignore;
* images: offered (a server that cannot take them refuses the request with a message);
* no frames: the canvas says "remote: committed blocks only".
"""

from __future__ import annotations

from typing import Any

from engine.serve import wire
from engine.events import ModelInfo
from engine.models.families import DIFFUSION_GEMMA, LLADA2, family_label

OPENAI_FIELDS = ("temp", "top_p", "top_k", "seed", "max_tokens")
MLX_VLM_FIELDS = ("max_denoising_steps", "block_length", "diffusion_sampler", "diffusion_full_canvas",
                  "diffusion_min_canvas_length", "diffusion_max_canvas_length")
OFFERED_BY_OWNER = {"vllm": OPENAI_FIELDS, "sglang": ("max_tokens",)}
# engine.Settings names -> request fields, where OpenAI's differ
REQUEST_NAMES = {"temp": "temperature"}


class ServerError(Exception):
    """The server cannot be used (one line)."""


def model_infos(listing: Any, token_texts: list[str]) -> list[ModelInfo]:
    """Every model of a `/v1/models` answer as a remote ModelInfo."""
    entries = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(entries, list):
        raise ServerError("the server's /v1/models answer has no model list")
    infos = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        described = entry.get(wire.MODEL_KEY)
        if isinstance(described, dict):
            try:
                infos.append(wire.decode_model(entry["id"], described, token_texts))
                continue
            except wire.WireError:
                pass  # an incompatible diffusion-chat: treat it as any server
        infos.append(guessed_info(entry["id"], str(entry.get("owned_by") or "")))
    if not infos:
        raise ServerError("the server lists no models")
    return infos


def guessed_info(model_id: str, owner: str) -> ModelInfo:
    family = LLADA2 if "llada" in model_id.lower() else DIFFUSION_GEMMA
    server = owner or "server"
    return ModelInfo(name=model_id, family=family, label=f"{family_label(family)} (remote, {server})",
                     supports_images=True, setting_defaults={}, remote=True, frames=False,
                     offered_settings=OFFERED_BY_OWNER.get(owner.lower(), OPENAI_FIELDS + MLX_VLM_FIELDS))


def choose(infos: list[ModelInfo], wanted: str | None) -> ModelInfo:
    if not wanted:
        return infos[0]
    for info in infos:
        if info.name == wanted:
            return info
    raise ServerError(f"the server has no model {wanted!r}; it serves: {', '.join(i.name for i in infos)}")


def request_name(setting: str) -> str:
    return REQUEST_NAMES.get(setting, setting)
