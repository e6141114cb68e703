"""`POST /v1/chat/completions` bodies -> what the engine thread runs, checked before anything is queued.

Sampler fields have the CLI's names (`engine.settings.SPECS`), except that OpenAI's `temperature` is the
`temp` setting and `max_completion_tokens` is `max_tokens`; they are checked by the settings schema, and a
refusal names the field as the request spelled it; a setting the model's family does not read (`top_p` for
DiffusionGemma) is refused naming it. `stop` strings are applied at block commits (engine.serve.stops). Fields
nobody here knows are ignored; OpenAI fields the engine cannot honour (tools, logprobs, penalties, n > 1, ...)
are refused, so a client never believes they took effect.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import SettingsError
from ..events import ModelInfo
from ..settings import SPECS, Settings, coerce
from .errors import APIError, bad_request
from .images import ImageFolder

# request field -> engine.Settings field, where the names differ
ALIASES = {"temperature": "temp", "max_completion_tokens": "max_tokens"}
# OpenAI fields the engine does not implement, and the values that mean "not used"
UNSUPPORTED = {
    "tools": lambda v: not v, "functions": lambda v: not v, "logit_bias": lambda v: not v,
    "tool_choice": lambda v: v in (None, "none", "auto"), "logprobs": lambda v: not v,
    "top_logprobs": lambda v: not v, "frequency_penalty": lambda v: not v, "presence_penalty": lambda v: not v,
    "n": lambda v: v in (None, 1),
    "response_format": lambda v: v is None or (isinstance(v, dict) and v.get("type") == "text"),
}
MAX_STOPS = 4   # as OpenAI
ROLES = ("system", "developer", "user", "assistant")
AUDIO_VIDEO_PARTS = ("input_audio", "audio_url", "video_url", "video", "audio", "file", "input_file")


@dataclass(frozen=True)
class Limits:
    max_tokens: int = 4096            # the most tokens one request may ask for
    max_image_bytes: int = 16 << 20   # one image, decoded
    allow_local_files: bool = False   # file:// URLs and plain paths in image_url parts


@dataclass
class ChatRequest:
    messages: tuple[dict, ...]
    settings: Settings
    think: bool = False
    stream: bool = False
    include_usage: bool = False
    frames: bool = False
    stops: tuple[str, ...] = ()       # `stop` strings: the answer ends before the first one
    images: ImageFolder | None = field(default=None, repr=False)   # decoded images, removed by `close()`

    def close(self) -> None:
        if self.images is not None:
            self.images.close()


def request_name(setting: str) -> str:
    """How a request spells a setting (`temp` -> `temperature`)."""
    return next((alias for alias, name in ALIASES.items() if name == setting), setting)


def parse_chat_request(body: Any, model: ModelInfo, limits: Limits,
                       new_images: Callable[[], ImageFolder] = ImageFolder) -> ChatRequest:
    """The checked request, or an APIError (400, 404 unknown model, 413 image too large)."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object", code="invalid_json")
    requested = body.get("model")
    if requested not in (None, "", model.name):
        raise APIError(404, f"model {requested!r} is not served here; this server serves {model.name!r}",
                       "model_not_found", "model")
    for name, unused in UNSUPPORTED.items():
        if name in body and not unused(body[name]):
            raise bad_request(f"{name} is not supported by diffusion-chat serve", name, "unsupported_parameter")
    stream, include_usage = stream_fields(body)
    settings = parse_settings(body, limits, model)
    images = new_images()
    try:
        messages = tuple(_message(raw, index, model, limits, images) for index, raw in
                         enumerate(_message_list(body.get("messages"))))
    except BaseException:
        images.close()
        raise
    return ChatRequest(messages, settings, think=_thinking(body), stream=stream,
                       include_usage=include_usage,
                       frames=flag(body, "diffusion_frames"), stops=parse_stops(body.get("stop")), images=images)


def parse_stops(value: Any) -> tuple[str, ...]:
    """OpenAI's `stop`: one string or a list of at most 4, none empty."""
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(stop, str) and stop for stop in stops):
        raise bad_request("stop must be a non-empty string or a list of them", "stop")
    if len(stops) > MAX_STOPS:
        raise bad_request(f"stop takes at most {MAX_STOPS} strings, got {len(stops)}", "stop")
    return tuple(stops)


def parse_settings(body: dict, limits: Limits, model: ModelInfo) -> Settings:
    values: dict[str, Any] = {}
    for key, value in body.items():
        name = ALIASES.get(key, key)
        if name not in SPECS or value is None:
            continue
        if model.family not in SPECS[name].families:
            # The family's sampler never reads it (DiffusionGemma's has no top-k / top-p): accepting it would let
            # a client believe it took effect.
            raise bad_request(f"{key} is not supported by {model.label} models (their sampler does not use it)",
                              key, "unsupported_parameter")
        if name in values and values[name] != value:
            raise bad_request(f"{key} and {request_name(name)} disagree; give one of them", key)
        try:
            values[name] = coerce(name, value)
        except SettingsError as exc:
            raise bad_request(exc.render(lambda n: key), key) from None
    try:
        settings = Settings(**values).validated()
    except SettingsError as exc:
        raise bad_request(exc.render(request_name), request_name(exc.settings[0]) if exc.settings else None) from None
    if settings.max_tokens is not None and settings.max_tokens > limits.max_tokens:
        raise bad_request(f"max_tokens must be at most {limits.max_tokens} on this server, got {settings.max_tokens}",
                          "max_tokens")
    return settings


def stream_fields(body: dict) -> tuple[bool, bool]:
    """`stream`, and `stream_options.include_usage` (refused without `stream`, as OpenAI and vLLM do)."""
    stream = flag(body, "stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise bad_request("stream_options must be an object", "stream_options")
    if options and not stream:
        raise bad_request("stream_options is only allowed when stream is true", "stream_options")
    return stream, stream and flag(options, "include_usage", "stream_options.include_usage")


def flag(body: dict, key: str, name: str | None = None) -> bool:
    value = body.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise bad_request(f"{name or key} must be true or false, got {value!r}"[:200], name or key)
    return value


def _thinking(body: dict) -> bool:
    """`enable_thinking` (top level, as mlx-vlm takes it) or `chat_template_kwargs.enable_thinking` (vLLM,
    SGLang)."""
    kwargs = body.get("chat_template_kwargs") or {}
    if not isinstance(kwargs, dict):
        raise bad_request("chat_template_kwargs must be an object", "chat_template_kwargs")
    return flag(body, "enable_thinking") or flag(kwargs, "enable_thinking", "chat_template_kwargs.enable_thinking")


def _message_list(messages: Any) -> list:
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty list of chat messages", "messages")
    return messages


def _message(raw: Any, index: int, model: ModelInfo, limits: Limits, images: ImageFolder) -> dict:
    where = f"messages[{index}]"
    if not isinstance(raw, dict):
        raise bad_request(f"{where} must be an object with a role and a content", where)
    role = raw.get("role")
    if role in ("tool", "function") or raw.get("tool_calls"):
        raise bad_request(f"{where}: tool messages and tool calls are not supported", f"{where}.role")
    if role not in ROLES:
        raise bad_request(f"{where}.role must be one of {', '.join(ROLES)}, got {role!r}"[:200], f"{where}.role")
    content = raw.get("content")
    if content is None and role == "assistant":
        content = ""
    if isinstance(content, str):
        return {"role": role, "content": content}
    if not isinstance(content, list):
        raise bad_request(f"{where}.content must be a string or a list of content parts", f"{where}.content")
    return {"role": role, "content": [_part(part, f"{where}.content[{n}]", model, limits, images)
                                      for n, part in enumerate(content)]}


def _part(part: Any, where: str, model: ModelInfo, limits: Limits, images: ImageFolder) -> dict:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise bad_request(f"{where}.text must be a string", f"{where}.text")
        return {"type": "text", "text": part["text"]}
    if kind in AUDIO_VIDEO_PARTS:
        raise bad_request(f"{where}: {kind} parts are not supported; this server takes text and images",
                          f"{where}.type", "unsupported_content")
    if kind != "image_url":
        raise bad_request(f"{where}.type must be text or image_url, got {kind!r}"[:200], f"{where}.type")
    if not model.supports_images:
        raise bad_request(f"{model.name} is text-only; it cannot take images", where, "unsupported_content")
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    if not isinstance(url, str) or not url:
        raise bad_request(f"{where}.image_url.url must be a data URL", f"{where}.image_url")
    return {"type": "image", "path": images.add(url, limits, f"{where}.image_url")}
