"""Releasing MLX's per-thread state on the thread that owns it, so a program that runs the engine on a thread
exits cleanly.

The cause of "terminate called without an active exception" (exit status 134) at the end of such a program:
MLX keeps state per OS thread in C++ `thread_local` storage: the thread's default streams, its random key (a
Python object: module construction draws initial weights with it) and its compile cache, whose entries for
`mx.compile`d functions (DiffusionGemma's GeGLU, for one) hold Python objects (the traced output structure). Those `thread_local` destructors run when the OS thread really ends, which is *after* Python has
marked the thread finished (`Thread.join()` has already returned). If the main thread is finalizing the
interpreter by then, the destructor's attempt to take the GIL (to drop its Python objects) makes CPython end the
thread with `pthread_exit`, whose forced unwind through a `noexcept` C++ destructor calls `std::terminate`.
Hence a race, lost in about 3 runs of 4; only after such state was made on that thread (plain arrays hold no
Python objects); never on the main thread (MLX tears its state down in its own atexit hook).

The cure is to empty that state while the thread still runs Python: `mx.clear_streams()` drops the calling
thread's streams, random key and compile cache, after which its `thread_local` destructors have nothing of
Python's left to release. `own_this_thread()` arranges that for the end of any thread that loads or generates
(the Python API); `release_this_thread()` does it at once (the engine thread, as it stops).
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

_owners = threading.local()


def _release_thread_state() -> None:
    """Finish this thread's queued MLX work and drop its streams, random key and compile cache. Only at the end
    of the thread's MLX life: arrays made on it stay valid, but a compiled function would trace again."""
    import mlx.core as mx

    mx.synchronize()
    mx.clear_streams()


class _ReleaseAtThreadEnd:
    """Lives in a `threading.local`: CPython drops a thread's locals while clearing its thread state, on that
    thread and still able to run Python, before `join()` returns; that is when `__del__` runs."""

    def __init__(self):
        self.pending = True

    def release(self) -> None:
        if self.pending:
            self.pending = False
            _release_thread_state()

    def __del__(self):
        try:
            self.release()
        except Exception:  # never let cleanup at a thread's end raise into the interpreter
            log.exception("releasing this thread's MLX state failed")


def own_this_thread() -> None:
    """Called by `engine.load` and `engine.generate`: if this is not the main thread, release its MLX state when
    it ends (arranged once per thread)."""
    if threading.current_thread() is threading.main_thread() or getattr(_owners, "at_end", None) is not None:
        return
    _owners.at_end = _ReleaseAtThreadEnd()


def release_this_thread() -> None:
    """Release this thread's MLX state now, at the end of its MLX work (the engine thread, as it stops)."""
    at_end = getattr(_owners, "at_end", None)
    if at_end is not None:
        at_end.release()
    elif threading.current_thread() is not threading.main_thread():
        _release_thread_state()
