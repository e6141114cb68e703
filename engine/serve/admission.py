"""Is a request's prompt one the engine can run? Checked on the HTTP side, before anything is queued and before a
stream's `200` goes out, so a client gets a 400 it will not retry instead of a 500 or an error chunk.

The engine checks the same rule again (engine.generation.context) and has the last word; this is only the early answer,
counted with the engine's own template and tokenizer (`ModelInfo.count_tokens`, MLX-free) on a worker thread."""

from __future__ import annotations

import asyncio
from typing import Sequence

from ..generation.context import fit_max_tokens
from ..errors import InputError, SettingsError
from ..events import ModelInfo
from ..settings import Settings
from .errors import APIError, bad_request


async def check_prompt(info: ModelInfo, messages: Sequence[dict], think: bool, settings: Settings) -> int:
    """The prompt's token count, or an APIError: 400 `empty_prompt` when the template leaves nothing to read (an
    empty or system-only conversation), 400 `context_length_exceeded` when it does not fit the context."""
    if info.count_tokens is None:
        return 0
    try:
        tokens = await asyncio.to_thread(info.count_tokens, list(messages), think)
    except InputError as exc:
        code = "empty_prompt" if "empty" in str(exc) else "invalid_value"
        raise bad_request(f"{exc} (the messages must hold a user turn with text or an image)"
                          if code == "empty_prompt" else str(exc), "messages", code) from None
    fits(info, settings, tokens)
    return tokens


def fits(info: ModelInfo, settings: Settings, prompt_tokens: int) -> None:
    budget = settings.max_tokens or info.setting_defaults.get("max_tokens") or 1
    try:
        fit_max_tokens(prompt_tokens, budget, settings.max_tokens is not None, info.context_length)
    except SettingsError as exc:
        raise APIError(400, exc.render(lambda name: name), "context_length_exceeded", "max_tokens") from None
    except InputError as exc:
        raise APIError(400, str(exc), "context_length_exceeded", "messages") from None
