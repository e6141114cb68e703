"""`BatchingWorker`: the engine worker the server talks to when it batches (`serve --max-batch N`, N > 1).

It offers what engine.serve.bridge uses of `engine.thread.worker.EngineWorker` (start, load_model, generate, cancel,
forget, close, frame_for) and keeps that worker for its one engine thread, its model and its prefix caches.
Generations do not queue there one by one: they wait in `Admissions`, and while any wait or run, one batch run
(engine.serve.batch_scheduler.BatchScheduler, queued on the engine thread as a single job) takes them in, up to
`max_batch` at a time, and denoises their canvases together.
"""

from __future__ import annotations

import threading
from typing import Callable, Hashable

from ..events import Frame, GenerationFailed, GenerationRequest, GenerationUpdate, WorkerEvent
from ..settings import Settings
from ..thread.worker import EngineWorker
from .batch_scheduler import Admitted, BatchScheduler

DEFAULT_MAX_BATCH = 4


class Admissions:
    """Requests waiting to join the batch run, and those in it (for cancelling), shared by the server's threads
    and the engine thread. `submit_run` queues a batch run on the engine thread when none is live."""

    def __init__(self, submit_run: Callable[[Hashable | None], None]):
        self._lock = threading.Lock()
        self._waiting: list[Admitted] = []
        self._running: dict[int, Admitted] = {}
        self._live = False
        self._submit_run = submit_run
        self.conversation: Hashable | None = None   # the conversation whose prefix cache the batch run has

    def add(self, admitted: Admitted) -> None:
        with self._lock:
            self._waiting.append(admitted)
            if not self._live:
                self._live = True
                self.conversation = admitted.request.conversation
                self._submit_run(self.conversation)

    def take(self, room: int) -> list[Admitted]:
        """Engine thread: up to `room` waiting requests, oldest first."""
        with self._lock:
            taken, self._waiting = self._waiting[:max(room, 0)], self._waiting[max(room, 0):]
            self._running.update((a.job, a) for a in taken)
        return taken

    def finished(self, job: int) -> None:
        with self._lock:
            self._running.pop(job, None)

    def close_if_empty(self) -> bool:
        """Engine thread: end the batch run if nothing waits (a later request queues a new one)."""
        with self._lock:
            if self._waiting:
                return False
            self._live = False
            return True

    def abandon(self) -> list[Admitted]:
        """The batch run could not run (no model): the requests it would have taken."""
        with self._lock:
            dropped, self._waiting, self._live = self._waiting, [], False
            for admitted in self._running.values():
                dropped.append(admitted)
            self._running.clear()
        return dropped

    def cancel(self, job: int | None = None) -> None:
        """Cancel one request (None: all), waiting or running."""
        with self._lock:
            for admitted in [*self._waiting, *self._running.values()]:
                if job is None or admitted.job == job:
                    admitted.cancel.set()

    def cancel_all(self) -> None:
        self.cancel(None)


class BatchingWorker:
    """See the module docstring. `load` / `generate` as for EngineWorker (tests may pass stand-ins; `generate`
    must take `batched=True`)."""

    def __init__(self, notify: Callable[[WorkerEvent], None], *, max_batch: int = DEFAULT_MAX_BATCH,
                 load: Callable | None = None, generate: Callable | None = None):
        self._notify = notify
        self._lock = threading.Lock()
        self._next_id = 1
        self._run_jobs: set[int] = set()        # the engine worker's ids of batch runs (not the server's)
        self._runs_lock = threading.Lock()       # a run's id is recorded before its events are read
        self._frames: dict[int, Frame] = {}
        self.admissions = Admissions(self._submit_run)
        scheduler = BatchScheduler(self.admissions, notify, self._frames, max_batch, generate)
        self._engine = EngineWorker(self._from_engine, load=load, generate=scheduler)

    def start(self) -> BatchingWorker:
        self._engine.start()
        return self

    def load_model(self, model_ref: str) -> int:
        self.admissions.cancel_all()
        return self._engine.load_model(model_ref)

    def generate(self, request: GenerationRequest) -> int:
        with self._lock:
            job = self._next_id
            self._next_id += 1
        self.admissions.add(Admitted(job, request, threading.Event()))
        return job

    def cancel(self, job: int) -> None:
        self.admissions.cancel(job)

    def forget(self, conversation: Hashable) -> None:
        self._engine.forget(conversation)

    def close(self, timeout: float = 5.0) -> None:
        self.admissions.cancel_all()
        self._engine.close(timeout)

    def frame_for(self, job: int) -> Frame | None:
        """The newest denoising frame of a running request (each request has its own slot)."""
        return self._frames.get(job)

    def _submit_run(self, conversation: Hashable | None) -> None:
        with self._runs_lock:   # held until the id is recorded: the run may end before `generate` returns
            self._run_jobs.add(self._engine.generate(GenerationRequest((), Settings(), conversation=conversation)))

    def _from_engine(self, event: WorkerEvent) -> None:
        """The engine worker's events: load events pass on; a batch run's own are not the server's jobs."""
        if isinstance(event, (GenerationUpdate, GenerationFailed)):
            with self._runs_lock:
                is_run = event.job in self._run_jobs
        if isinstance(event, (GenerationUpdate, GenerationFailed)) and is_run:
            if isinstance(event, GenerationFailed):
                # The run never ran (no model loaded) or broke: every request it held gets the message.
                for admitted in self.admissions.abandon():
                    self._notify(GenerationFailed(admitted.job, event.message))
            return
        self._notify(event)


def worker_factory(max_batch: int) -> Callable[[Callable[[WorkerEvent], None]], EngineWorker | BatchingWorker]:
    """The worker `serve` uses: one request at a time for `max_batch` 1, else batched."""
    if max_batch <= 1:
        return EngineWorker
    return lambda notify: BatchingWorker(notify, max_batch=max_batch)
