"""Server-sent events and response bodies read with a ceiling: a server's reply is untrusted, and a line
reader that waits for a newline would hold whatever a hostile server sends before it. Each event's data
(and each whole body) is refused past its limit, so what one reply can make the app hold is bounded.
"""

from __future__ import annotations

from typing import AsyncIterator

from engine.io import bounded_json

MAX_EVENT_BYTES = 4 << 20        # one SSE event: a frame of 4,096 positions with texts is ~300 KB
MAX_BODY_BYTES = 8 << 20         # a /v1/models answer
MAX_ERROR_BYTES = 64 << 10       # an error body (only its first line is shown)


class TooLarge(Exception):
    """A reply over its limit (one line)."""


async def events(chunks: AsyncIterator[bytes], limit: int = MAX_EVENT_BYTES) -> AsyncIterator[str]:
    """The `data` of each event of an SSE byte stream (fields other than data and comments are skipped)."""
    pending = b""
    data: list[bytes] = []
    size = 0
    async for chunk in chunks:
        pending += chunk
        if len(pending) > limit + 2:
            raise TooLarge(f"the server sent an event line over {limit >> 20} MiB")
        if b"\n" not in chunk:
            continue
        *lines, pending = pending.split(b"\n")
        for line in lines:
            line = line[:-1] if line.endswith(b"\r") else line
            if not line:
                if data:
                    yield b"\n".join(data).decode("utf-8", "replace")
                data, size = [], 0
            elif line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(b" ") else value)
                size += len(value)
                if size > limit:
                    raise TooLarge(f"the server sent an event over {limit >> 20} MiB")
    if data:
        yield b"\n".join(data).decode("utf-8", "replace")


async def body(chunks: AsyncIterator[bytes], limit: int) -> bytes:
    """A whole response body, refused past `limit` bytes."""
    read = bytearray()
    async for chunk in chunks:
        read += chunk
        if len(read) > limit:
            raise TooLarge(f"the server's answer is over {limit >> 10} KiB")
    return bytes(read)


def loads(data: str | bytes):
    """JSON off the wire: a ValueError for anything malformed, too deep or with a number too long."""
    return bounded_json.loads(data)
