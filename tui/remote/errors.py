"""The error shapes OpenAI-compatible servers send, each turned into one line for the transcript.

Seen in the wild: OpenAI's and mlxcel's `{"error": {"message": ...}}` (also SGLang's mid-stream chunk),
SGLang's top-level `{"object": "error", "message": ...}`, FastAPI's (mlx-vlm's) `{"detail": "..."}` (or a
list of validation problems), and mlx-vlm's mid-stream `{"error": "<string>"}`.
"""

from __future__ import annotations

from engine.io import bounded_json
from typing import Any

MAX_LENGTH = 300


def error_text(payload: Any) -> str | None:
    """The message of an error object in any of the known shapes; None if `payload` is not an error."""
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict):
        return _line(error.get("message") or error.get("type") or "the server reported an error")
    if isinstance(error, str) and error:
        return _line(error)
    if payload.get("object") == "error":
        return _line(payload.get("message") or "the server reported an error")
    detail = payload.get("detail")
    if isinstance(detail, str) and detail:
        return _line(detail)
    if isinstance(detail, list) and detail:
        return _line("; ".join(_validation_problem(item) for item in detail))
    return None


def http_error_line(status: int, body: bytes) -> str:
    """`HTTP 400: <the server's message>` for a refused request, whatever the body's shape."""
    try:
        message = error_text(bounded_json.loads(body))
    except (ValueError, UnicodeDecodeError):
        message = None
    if message is None:
        text = body.decode("utf-8", "replace").strip()
        message = _line(text) if text else "no details"
    return f"HTTP {status}: {message}"


def _validation_problem(item: Any) -> str:
    if isinstance(item, dict):
        where = ".".join(str(part) for part in item.get("loc", ()) if part != "body")
        return f"{where}: {item.get('msg', '')}" if where else str(item.get("msg", item))
    return str(item)


def _line(text: Any) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= MAX_LENGTH else line[: MAX_LENGTH - 1] + "…"
