"""Refusals in OpenAI's shape: `{"error": {"message", "type", "code", "param"}}` with an HTTP status before a
stream starts, or as one `data:` chunk (then `[DONE]`) after it did."""

from __future__ import annotations

from typing import Any

# HTTP status -> OpenAI's error type.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    500: "server_error",
    503: "server_error",
}


class APIError(Exception):
    """A request the server refuses (or could not serve), as one line for the person who sent it."""

    def __init__(self, status: int, message: str, code: str | None = None, param: str | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return error_body(self.message, ERROR_TYPES.get(self.status, "server_error"), self.code, self.param)


def error_body(message: str, type: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "code": code, "param": param}}


def bad_request(message: str, param: str | None = None, code: str = "invalid_value") -> APIError:
    return APIError(400, message, code, param)


def generation_failed(message: str, stopping: bool) -> APIError:
    """A job that ended in an engine failure: a 503 when the server's stop cancelled it, else a 500."""
    if stopping:
        return APIError(503, "the server is shutting down", "server_shutting_down")
    return APIError(500, message, "generation_failed")
