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


# ---- generations still running when the interpreter exits ------------------------------------------------
#
# A daemon thread that is still generating when the main thread returns is frozen by CPython's finalization
# the next time it needs the GIL: in the middle of MLX's C++ code, whose unwinding then aborts (rc -6,
# "terminate called without an active exception"). Being frozen in plain Python is harmless. So at shutdown,
# before the interpreter finalizes (threading's own exit hooks run while every thread still runs Python), no
# generation may resume its MLX work any more, and the ones inside it are waited for: each runs until its
# next event (at most one denoising step or prefill chunk), releases its thread's MLX state and ends.

SHUTDOWN_WAIT_S = 30.0
_shutting_down = threading.Event()
_inside = 0                       # generations running MLX work right now
_left = threading.Condition()


def stop_at_shutdown(events):
    """`events` (a generation), which ends at its next event once the interpreter is exiting, releasing its
    thread's MLX state first (MLX's exit teardown aborts on a stream a live thread still owns). A value sent in
    (a batched generation's logits, engine.generation.forward) is passed on."""
    global _inside
    iterator = iter(events)
    reply = None
    while True:
        with _left:
            if _shutting_down.is_set():
                return
            _inside += 1
        try:
            event = next(iterator) if reply is None else iterator.send(reply)
            stopping = _shutting_down.is_set()
            if stopping:
                release_this_thread()    # still counted as inside: the exit waits for this
        except StopIteration:
            return
        finally:
            with _left:
                _inside -= 1
                _left.notify_all()
        if stopping:
            return
        reply = yield event


def shutting_down() -> bool:
    return _shutting_down.is_set()


def _stop_generations() -> None:
    with _left:
        _shutting_down.set()
        if not _left.wait_for(lambda: _inside == 0, SHUTDOWN_WAIT_S):
            log.warning("%d generation(s) still running at exit", _inside)


# threading's exit hooks run when the main thread ends, before `atexit` and before daemon threads are frozen.
threading._register_atexit(_stop_generations)
