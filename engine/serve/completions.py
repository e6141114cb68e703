"""`POST /v1/completions`: OpenAI's legacy text completion, answered by diffusion infilling (engine.generation.fill).

The answer is a template: the `prompt` as given text, a hole of `max_tokens` positions, then the `suffix` as given
text. Only the hole is denoised, and the model sees both sides of it at every step, so a suffix is honoured the way
an autoregressive server can only manage with a FIM-trained model. The chat turn the model answers is the same
text in `/fill`'s syntax (`prompt___suffix`), as the app's `/fill` sends it. The completion's `text` is the
filling alone.

Limits: the hole is one block (DiffusionGemma: at most the canvas length; LLaDA-2: the block length), so
`max_tokens` is refused past it; there is no thinking channel; a stream sends the filling in one chunk once it
is denoised (a fill commits its hole in one block). `completion_tokens` counts the hole's positions.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

from ..events import Finished, GenerationFailed, ModelInfo
from ..models.families import DIFFUSION_GEMMA
from ..generation.fill import FillTemplate, Given, Hole
from ..settings import Settings
from .bridge import EngineBridge, Ticket
from .chunks import DONE, sse
from .errors import APIError, bad_request, error_body, generation_failed
from .requests import UNSUPPORTED, Limits, parse_settings, parse_stops, stream_fields
from .stops import cut

DEFAULT_MAX_TOKENS = 16   # OpenAI's default for completions
# Completion fields the engine cannot honour (beyond the chat ones), and the values that mean "not used".
NOT_HONOURED = {**UNSUPPORTED, "echo": lambda v: not v, "best_of": lambda v: v in (None, 1),
                "diffusion_frames": lambda v: not v}


@dataclass
class CompletionRequest:
    prompt: str
    suffix: str
    settings: Settings
    stream: bool = False
    include_usage: bool = False
    stops: tuple[str, ...] = ()

    @property
    def hole(self) -> int:
        return self.settings.max_tokens

    def messages(self) -> tuple[dict, ...]:
        return ({"role": "user", "content": f"{self.prompt}___{self.suffix}"},)

    def template(self) -> FillTemplate:
        segments = [Given(self.prompt), Hole(self.hole), Given(self.suffix)]
        return FillTemplate(tuple(s for s in segments if not isinstance(s, Given) or s.text))


def parse_completion_request(body: Any, model: ModelInfo, limits: Limits) -> CompletionRequest:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object", code="invalid_json")
    if body.get("model") not in (None, "", model.name):
        raise APIError(404, f"model {body.get('model')!r} is not served here; this server serves {model.name!r}",
                       "model_not_found", "model")
    for name, unused in NOT_HONOURED.items():
        if name in body and not unused(body[name]):
            raise bad_request(f"{name} is not supported by diffusion-chat serve's completions", name,
                              "unsupported_parameter")
    prompt = body.get("prompt", "")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise bad_request("prompt must be one string (token ids and batches of prompts are not supported)", "prompt")
    suffix = body.get("suffix") or ""
    if not isinstance(suffix, str):
        raise bad_request("suffix must be a string", "suffix")
    stream, include_usage = stream_fields(body)
    settings = parse_settings(body, limits, model)
    if settings.max_tokens is None:
        settings = settings.replace(max_tokens=DEFAULT_MAX_TOKENS)
    return CompletionRequest(prompt, suffix, settings, stream, include_usage, parse_stops(body.get("stop")))


def check_hole(request: CompletionRequest, settings: Settings, model: ModelInfo) -> None:
    """The hole is denoised in one block: `max_tokens` must fit one (a 400 naming it, before anything runs)."""
    name = "diffusion_max_canvas_length" if model.family == DIFFUSION_GEMMA else "block_length"
    block = getattr(settings, name) or model.setting_defaults.get(name)
    if block and request.hole > block:
        raise bad_request(f"max_tokens ({request.hole}) is more than one block ({name} {block}): a completion is "
                          "denoised in one block; ask for fewer tokens", "max_tokens")


class TextCompletion:
    """The objects of one text completion (same id, time, model and seed on each)."""

    def __init__(self, model: str, seed: int | None, hole: int):
        self.id = "cmpl-" + secrets.token_hex(12)
        self.created, self.model, self.hole = int(time.time()), model, hole
        self.extra = {} if seed is None else {"seed": seed}

    def _object(self, text: str, finish_reason: str | None, **more: Any) -> dict:
        return {"id": self.id, "object": "text_completion", "created": self.created, "model": self.model,
                "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish_reason}],
                **self.extra, **more}

    def usage(self, finished: Finished) -> dict:
        prompt = finished.stats.prompt_tokens
        return {"prompt_tokens": prompt, "completion_tokens": self.hole, "total_tokens": prompt + self.hole}

    def filling(self, finished: Finished, stops: tuple[str, ...]) -> tuple[str, str]:
        """The hole's text (cut at a stop string) and the finish reason."""
        spans = finished.filled_spans or ()
        text = "".join(finished.content[start:end] for start, end in spans)
        text, stopped = cut(text, stops)
        return text, "stop" if stopped or finished.finish_reason == "cancelled" else "length"

    def whole(self, finished: Finished, stops: tuple[str, ...]) -> dict:
        text, reason = self.filling(finished, stops)
        return self._object(text, reason, usage=self.usage(finished))

    def chunks(self, finished: Finished, stops: tuple[str, ...], include_usage: bool):
        text, reason = self.filling(finished, stops)
        if text:
            yield sse(self._object(text, None))
        yield sse(self._object("", reason))
        if include_usage:
            yield sse({**self._object("", None), "choices": [], "usage": self.usage(finished)})
        yield DONE


async def finished_event(ticket: Ticket, bridge: EngineBridge, gone=None) -> Finished:
    """Wait for the job's end (APIError if it failed or the client went away)."""
    while True:
        if gone is not None and gone.done():
            raise APIError(499, "the client went away", "client_closed")
        _, events = await ticket.next(0.25)
        for event in events:
            if isinstance(event, GenerationFailed):
                raise generation_failed(event.message, bridge.stopping)
            if isinstance(event.event, Finished):
                return event.event


async def stream_completion(bridge: EngineBridge, ticket: Ticket, request: CompletionRequest,
                            completion: TextCompletion, on_finished=lambda finished: None):
    try:
        try:
            finished = await finished_event(ticket, bridge)
        except APIError as exc:
            yield sse(exc.body() if exc.status != 503 else error_body(exc.message, "server_error", exc.code))
            yield DONE
            return
        on_finished(finished)
        for chunk in completion.chunks(finished, request.stops, request.include_usage):
            yield chunk
    finally:
        bridge.cancel(ticket)
