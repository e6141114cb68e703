"""JSON from someone else (a request body, a server's reply, a replay file's header), parsed only once its
nesting is known to be shallow.

`json.loads` recurses once per level: a body nested 50,000 deep raises `RecursionError` from deep inside
the parser (or, on a smaller C stack, worse). `loads` measures the depth first — strings removed by one
regular expression, then the brackets' running sum, both in C — and refuses anything deeper than `max_depth`
with a `JSONDepthError` (a ValueError, like any other malformed JSON), so callers keep their one
`except ValueError`. Python's own limit on the digits of an integer (4,300) already turns a huge number
into a ValueError; `1e400` parses to infinity, which the callers' range checks refuse.
"""

from __future__ import annotations

import json
import re

import numpy as np

# Every real document here (OpenAI requests with content parts and tool schemas, trajectory headers, model
# listings) is under 20 levels deep.
MAX_DEPTH = 64
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPEN = np.zeros(256, np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


class JSONDepthError(ValueError):
    """The document nests deeper than the caller allows."""


def depth(document: bytes | str) -> int:
    """How deep the brackets of `document` nest (brackets inside strings do not count)."""
    raw = document.encode("utf-8", "surrogatepass") if isinstance(document, str) else bytes(document)
    outside = _STRING.sub(b"", raw)
    if not outside:
        return 0
    running = np.cumsum(_OPEN[np.frombuffer(outside, np.uint8)], dtype=np.int64)
    return int(running.max(initial=0))


def loads(document: bytes | bytearray | str, max_depth: int = MAX_DEPTH):
    """`json.loads`, refusing a document nested deeper than `max_depth` before parsing it."""
    found = depth(document)
    if found > max_depth:
        raise JSONDepthError(f"it nests {found} levels deep (the limit is {max_depth})")
    return json.loads(document)
