"""Will the next turn fit the model's context? The same rule the engine applies (engine.generation.context), counted with
the engine's own template and tokenizer (`ModelInfo.count_tokens`) so the app can refuse before sending."""

from __future__ import annotations

import asyncio
from typing import Sequence

from engine.generation.context import fit_max_tokens
from engine.errors import EngineError, SettingsError
from engine.events import ModelInfo
from engine.settings import SPECS, Settings


def verdict(model: ModelInfo, settings: Settings, prompt_tokens: int) -> str | None:
    """None when a prompt of `prompt_tokens` fits the context with this turn's max_tokens, else the one-line
    reason (settings named by their panel labels)."""
    budget = settings.max_tokens or model.setting_defaults.get("max_tokens") or 1
    try:
        fit_max_tokens(prompt_tokens, budget, settings.max_tokens is not None, model.context_length)
    except SettingsError as exc:
        return exc.render(lambda name: SPECS[name].label_for(model.family))
    except EngineError as exc:
        return str(exc)
    return None


async def refusal(model: ModelInfo, settings: Settings, messages: Sequence[dict], think: bool) -> str | None:
    """Why the prompt `messages` cannot be sent, or None. Counted on a worker thread, so a huge paste never
    blocks the UI; the engine checks again and has the last word (its refusal arrives as a failed answer)."""
    if model.count_tokens is None or not model.context_length:
        return None
    try:
        tokens = await asyncio.to_thread(model.count_tokens, messages, think)
    except EngineError:
        return None  # a problem with the messages themselves: the engine reports it, in the transcript
    return verdict(model, settings, tokens)
