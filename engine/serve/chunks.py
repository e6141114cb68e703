"""OpenAI's chat completion objects, as the server sends them: stream chunks (Server-Sent Events), the
non-stream completion, usage, and the engine's finish reasons in OpenAI's words.

Finish reasons: the engine's `stop` (an end-of-turn id) -> `stop`; `length` (max_tokens reached) ->
`length`; `cancelled` (the client went away, or the server is shutting down) -> `stop`, as mlxcel does —
OpenAI has no word for it; the engine's own reason stays in the `diffusion_stats` extension.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from ..events import Stats

FINISH_REASONS = {"stop": "stop", "length": "length", "cancelled": "stop"}
DONE = b"data: [DONE]\n\n"


def sse(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def usage(stats: Stats) -> dict:
    return {"prompt_tokens": stats.prompt_tokens, "completion_tokens": stats.generated_tokens,
            "total_tokens": stats.prompt_tokens + stats.generated_tokens}


class Completion:
    """The objects of one completion: same id, creation time and model name on every chunk."""

    def __init__(self, model: str, seed: int | None = None):
        self.id = "chatcmpl-" + secrets.token_hex(12)
        self.created = int(time.time())
        self.model = model
        # The seed the answer ran with (an extension field, on every object: pass it back to reproduce it).
        self.extra = {} if seed is None else {"seed": seed}

    def chunk(self, delta: dict, finish_reason: str | None = None, **extensions: Any) -> dict:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
                **self.extra, **extensions}

    def text(self, content: str, reasoning: str, **extensions: Any) -> dict:
        """A chunk of committed text: reasoning (if any) and answer text (if any) in one delta."""
        delta = {}
        if reasoning:
            delta["reasoning_content"] = reasoning
        if content:
            delta["content"] = content
        return self.chunk(delta, **extensions)

    def usage_chunk(self, stats: Stats) -> dict:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "choices": [], "usage": usage(stats), **self.extra}

    def whole(self, content: str, reasoning: str, finish_reason: str, stats: Stats, **extensions: Any) -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning:
            message["reasoning_content"] = reasoning
        return {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": FINISH_REASONS[finish_reason]}],
                "usage": usage(stats), **self.extra, **extensions}
