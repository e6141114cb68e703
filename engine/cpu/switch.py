"""The CPU path's one switch, without MLX: `DIFFUSION_CHAT_HOST_OPS=0` turns it off for the whole process;
`disabled()` turns it off for the code it wraps.

`disabled()` is per thread (a context variable, like a trace): wrap the code that runs the ops, e.g. a
gradient, which needs MLX to see the whole graph. A process-wide choice (a test run, a benchmark's child) is
the environment variable, read at every op so that a test may set it.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

ENV = "DIFFUSION_CHAT_HOST_OPS"

_off_here: ContextVar[bool] = ContextVar("diffusion_chat_host_ops_off", default=False)


def requested() -> bool:
    """Whether the host path may run here: not switched off by the environment nor by `disabled()`."""
    return os.environ.get(ENV, "1").strip() != "0" and not _off_here.get()


@contextmanager
def disabled() -> Iterator[None]:
    """Run the wrapped code on the pure-MLX path (on this thread)."""
    token = _off_here.set(True)
    try:
        yield
    finally:
        _off_here.reset(token)
