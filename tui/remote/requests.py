"""A `GenerationRequest` as an OpenAI chat completion request: messages with images as data URLs, the
settings the server takes (and only those that are set), thinking in both spellings servers read."""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Any

from engine.errors import InputError
from engine.events import GenerationRequest, ModelInfo
from engine.settings import specs_for

from .servers import request_name


def request_body(request: GenerationRequest, model: ModelInfo) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model.name, "messages": [openai_message(m) for m in request.messages],
                            "stream": True, "stream_options": {"include_usage": True}}
    offered = set(model.offered_settings if model.offered_settings is not None else specs_for(model.family))
    for name, value in request.settings.to_dict().items():
        if name in offered and name in specs_for(model.family):
            body[request_name(name)] = value
    if request.think:
        # mlx-vlm reads the top-level flag, vLLM and SGLang the template's; each ignores the other.
        body["enable_thinking"] = True
        body["chat_template_kwargs"] = {"enable_thinking": True}
    if model.frames:
        body["diffusion_frames"] = True
    return body


def openai_message(message: dict) -> dict:
    content = message["content"]
    if isinstance(content, str):
        return {"role": message["role"], "content": content}
    parts = []
    for item in content:
        if item.get("type") == "image":
            parts.append({"type": "image_url", "image_url": {"url": data_url(item["path"])}})
        else:
            parts.append({"type": "text", "text": item.get("text", "")})
    return {"role": message["role"], "content": parts}


def data_url(path: str) -> str:
    """The image file as a data URL (read on the client's thread, never the UI's)."""
    file = Path(path).expanduser()
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the image {file.name}: {exc.strerror or exc}") from None
    mime = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
