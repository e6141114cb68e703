"""The engine thread's side of batched serving: the running generations advance in lockstep, and at every turn
the decoder passes they all wait for run as one batched forward (engine.generation.forward.forward_all).

Each generation is an `engine.generate(..., batched=True)` stream with its own randomness, cache and settings;
it runs until it asks for its next decoder pass (a `DenoiseCall`) or ends. A request that arrives while others
run joins at the next turn (after its own prefill), up to `max_batch` at once; the rest wait their turn. Only
the decoder passes are shared: each request's draws, acceptance decisions and commits are its own, so its
answer is its solo answer up to the batched products' float rounding.

One prefix cache (the server's conversation, engine.Session) goes to one running request at a time, so a
client re-sending a conversation still has its prefix reused; requests running beside it prefill afresh.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import EngineError
from ..events import Frame, GenerationFailed, GenerationRequest, GenerationUpdate, Step
from ..generation.forward import DenoiseCall, forward_all
from ..thread.worker import error_line

log = logging.getLogger(__name__)


@dataclass
class Admitted:
    """A request handed to the scheduler: its job id, what it asks for, and its own cancel flag."""

    job: int
    request: GenerationRequest
    cancel: threading.Event


class _Stream:
    """One running generation: its event stream and the logits to send into it next."""

    def __init__(self, admitted: Admitted, events, uses_session: bool, notify, frames: dict):
        self.admitted, self.events, self.uses_session = admitted, events, uses_session
        self._notify, self._frames = notify, frames
        self.reply: Any = None

    @property
    def job(self) -> int:
        return self.admitted.job

    def advance(self) -> DenoiseCall | None:
        """Run until the generation asks for a decoder pass (returned) or ends (None), passing its events on."""
        while True:
            try:
                item = self.events.send(self.reply)
            except StopIteration:
                self._frames.pop(self.job, None)
                return None
            except Exception as exc:
                self.fail(exc)
                return None
            self.reply = None
            if isinstance(item, DenoiseCall):
                return item
            if isinstance(item, Step):
                self._frames[self.job] = Frame(self.job, item)   # one reference assignment: atomic for readers
            else:
                self._notify(GenerationUpdate(self.job, item))

    def fail(self, exc: Exception) -> None:
        if not isinstance(exc, EngineError):
            log.error("generation failed", exc_info=exc)
        self.events.close()
        self._frames.pop(self.job, None)
        self._notify(GenerationFailed(self.job, error_line(exc)))


class BatchScheduler:
    """Called by `engine.thread.worker.EngineWorker` on its engine thread as its `generate` function, once per batch
    run: it takes requests from `admissions` (engine.serve.batch_worker.Admissions) until none is left."""

    def __init__(self, admissions, notify: Callable, frames: dict, max_batch: int, generate: Callable | None = None):
        if generate is None:
            from ..generation.api import generate
        self.admissions, self.notify, self.frames = admissions, notify, frames
        self.max_batch = max(1, int(max_batch))
        self.generate = generate

    def __call__(self, model, messages, settings, think, cancel, session, progress=None):
        """(EngineWorker's generate signature; the batch run's own events are none.) `cancel` is set when the
        worker closes or loads another model: every request is then cancelled."""
        running: list[_Stream] = []
        session_free = session is not None
        conversation = self.admissions.conversation
        try:
            while True:
                if cancel is not None and cancel.is_set():
                    self.admissions.cancel_all()
                for admitted in self.admissions.take(self.max_batch - len(running)):
                    shares = session_free and admitted.request.conversation == conversation
                    stream = self._start(model, admitted, session if shares else None, shares)
                    if stream is not None:
                        running.append(stream)
                        session_free = session_free and not shares
                if not running:
                    if self.admissions.close_if_empty():
                        return ()
                    continue
                waiting = []
                for stream in running:
                    call = stream.advance()
                    if call is not None:
                        waiting.append((stream, call))
                    else:
                        session_free = session_free or stream.uses_session
                        self.admissions.finished(stream.job)
                running = self._forward(model.network, waiting)
        except Exception as exc:
            log.error("the batch scheduler failed", exc_info=exc)
            for stream in running:
                stream.fail(exc)
                self.admissions.finished(stream.job)
            raise

    def _start(self, model, admitted: Admitted, session, shares: bool) -> _Stream | None:
        request, job = admitted.request, admitted.job
        extra = {"fill": request.fill} if request.fill is not None else {}
        try:
            events = self.generate(model, messages=list(request.messages), settings=request.settings,
                                   think=request.think, cancel=admitted.cancel, session=session,
                                   progress=lambda event: self.notify(GenerationUpdate(job, event)),
                                   batched=True, record=request.record, **extra)
        except Exception as exc:
            if not isinstance(exc, EngineError):
                log.error("generation failed", exc_info=exc)
            self.notify(GenerationFailed(job, error_line(exc)))
            self.admissions.finished(job)
            return None
        return _Stream(admitted, iter(events), shares, self.notify, self.frames)

    def _forward(self, network, waiting: list[tuple[_Stream, DenoiseCall]]) -> list[_Stream]:
        """One batched forward for every waiting stream; the streams still running."""
        if not waiting:
            return []
        try:
            replies = forward_all(network, [call for _, call in waiting])
        except Exception as exc:
            for stream, _ in waiting:
                stream.fail(exc)
                self.admissions.finished(stream.job)
            return []
        for (stream, _), logits in zip(waiting, replies):
            stream.reply = logits
        return [stream for stream, _ in waiting]
