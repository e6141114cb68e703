"""The engine thread: one long-lived thread that owns MLX for the whole life of an app.

MLX ties its streams to the thread that created them, so the model is loaded and every generation runs
on this one thread, and everything holding MLX arrays (the model, the conversations' prefix caches) lives
here and nowhere else. A UI talks to it through three things:

* commands (`load_model`, `generate`, `cancel`, `forget`, `close`), queued and run one at a time;
* `latest_frame`, a slot that holds only the newest denoising `Step` (overwritten every step, read by the UI
  on its own timer, so a slow UI never slows the engine and never sees a backlog);
* `notify`, a callback the UI supplies for the rare events (`engine.events`: load progress, model ready,
  generation started / block committed / finished / failed). It is called on the engine thread (or on the
  download thread for progress) and must return quickly, e.g. by posting a message to the UI's own queue.

Every event names the job it belongs to, so a UI can drop events of a job it no longer cares about. The UI
learns about the model only through a plain `ModelInfo`. Nothing here imports a UI toolkit.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from ..errors import EngineError
from .release import release_this_thread
from ..events import (
    Frame,
    GenerationFailed,
    GenerationRequest,
    GenerationUpdate,
    LoadFailed,
    LoadProgress,
    ModelLoaded,
    Step,
    WorkerEvent,
)

log = logging.getLogger(__name__)

# Started workers not closed yet. Python runs atexit hooks before it finalizes, while the (daemon) engine threads
# can still run: closing them there lets each release its MLX state itself instead of dying mid-finalization.
_running: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_running_workers() -> None:
    for worker in list(_running):
        worker.close()

# Download progress can arrive per network chunk; the UI needs far fewer updates than that.
PROGRESS_INTERVAL_S = 0.1


@dataclass
class _Job:
    id: int
    cancel: threading.Event = field(default_factory=threading.Event)


@dataclass
class _LoadJob(_Job):
    model_ref: str = ""


@dataclass
class _GenerateJob(_Job):
    request: GenerationRequest | None = None


@dataclass
class _ForgetJob(_Job):
    conversation: Hashable = None


_STOP = object()


class EngineWorker:
    """Runs `load` and `generate` on one dedicated thread; see the module docstring for the protocol.

    `load` and `generate` default to `engine.load` and `engine.generate`; tests and benchmarks may pass
    stand-ins with the same signatures.
    """

    def __init__(
        self,
        notify: Callable[[WorkerEvent], None],
        *,
        load: Callable[..., Any] | None = None,
        generate: Callable[..., Any] | None = None,
    ):
        if load is None or generate is None:
            from ..generation.api import generate as engine_generate
            from ..io.loader import load as engine_load

            load, generate = load or engine_load, generate or engine_generate
        self._notify = notify
        self._load = load
        self._generate = generate
        self._commands: queue.Queue = queue.Queue()
        self._lock = threading.Lock()      # guards _next_id, _active and _pending
        self._next_id = 1
        self._active: _Job | None = None
        self._pending: list[_Job] = []
        # Engine-thread state: the model and each conversation's prefix cache (engine.Session).
        self._model = None
        self._thinking = False             # the model's template writes the thinking switch (ModelInfo.thinking)
        self._sessions: dict[Hashable, Any] = {}
        # Replaced whole (one reference assignment, atomic under the GIL), never mutated: a reader on
        # another thread sees either the previous frame or the new one.
        self.latest_frame: Frame | None = None
        self._thread = threading.Thread(target=self._run, name="diffusion-chat-engine", daemon=True)

    # ---- commands (any thread) -------------------------------------------------------------------

    def start(self) -> EngineWorker:
        self._thread.start()
        _running.add(self)
        return self

    def load_model(self, model_ref: str) -> int:
        """Queue loading `model_ref` (folder or Hub id). Cancels whatever runs or waits; the current model
        and every prefix cache are dropped before the new one loads, so two models never sit in memory."""
        self._cancel_all()
        return self._submit(lambda id: _LoadJob(id, model_ref=str(model_ref)))

    def generate(self, request: GenerationRequest) -> int:
        """Queue a generation with the loaded model; returns its job id."""
        return self._submit(lambda id: _GenerateJob(id, request=request))

    def cancel(self, job: int) -> None:
        """Cancel one job: a generation stops within one denoising step, a download within one chunk, a
        queued job never starts. Unknown or finished jobs are ignored."""
        with self._lock:
            for queued in [self._active, *self._pending]:
                if queued is not None and queued.id == job:
                    queued.cancel.set()

    def forget(self, conversation: Hashable) -> None:
        """Drop a conversation's prefix caches (it was deleted, or its history was rewritten)."""
        self._submit(lambda id: _ForgetJob(id, conversation=conversation))

    def close(self, timeout: float = 5.0) -> None:
        """Cancel everything and stop the thread, which releases the model and its MLX state on itself (waits at
        most `timeout` seconds). A worker still running when the interpreter exits is closed by an atexit hook,
        while its thread can still run (see engine.thread.release for why that matters)."""
        _running.discard(self)
        self._cancel_all()
        self._commands.put(_STOP)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _cancel_all(self) -> None:
        with self._lock:
            for job in [self._active, *self._pending]:
                if job is not None:
                    job.cancel.set()

    def _submit(self, make_job: Callable[[int], _Job]) -> int:
        with self._lock:
            job = make_job(self._next_id)
            self._next_id += 1
            self._pending.append(job)
        self._commands.put(job)
        return job.id

    def frame_for(self, job: int) -> Frame | None:
        """The newest denoising frame if it is `job`'s (one slot: only the running job writes it)."""
        frame = self.latest_frame
        return frame if frame is not None and frame.job == job else None

    # ---- the engine thread ---------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while (job := self._commands.get()) is not _STOP:
                with self._lock:
                    self._pending.remove(job)
                    self._active = job
                try:
                    if isinstance(job, _LoadJob):
                        self._run_load(job)
                    elif isinstance(job, _ForgetJob):
                        for think in (False, True):
                            self._sessions.pop((job.conversation, think), None)
                    else:
                        self._run_generation(job)
                finally:
                    with self._lock:
                        self._active = None
        finally:
            # MLX state is released on the thread that made it: the model and the caches first, then the
            # thread's streams, random key and compile cache (engine.thread.release).
            self._model = None
            self._sessions.clear()
            release_this_thread()

    def _run_load(self, job: _LoadJob) -> None:
        # The model that works stays until the new one is ready: a bad path or a failed download keeps it.
        if job.cancel.is_set():
            self._notify(LoadFailed(job.id, f"loading {job.model_ref} cancelled", cancelled=True))
            return
        last_report = [0.0, ""]

        def progress(done: int, total: int | None, description: str, stage: str = "download") -> None:
            now = time.monotonic()
            finished = total is not None and done >= total
            if finished or stage != last_report[1] or now - last_report[0] >= PROGRESS_INTERVAL_S:
                last_report[:] = [now, stage]
                self._notify(LoadProgress(job.id, int(done), total, description, stage))

        try:
            model = self._load(job.model_ref, progress=progress, cancel=job.cancel)
            info = model.info()
        except Exception as exc:
            self._notify(LoadFailed(job.id, error_line(exc), cancelled=job.cancel.is_set()))
            return
        if job.cancel.is_set():
            # A newer command arrived while the weights were loading; do not keep a model nobody wants.
            self._notify(LoadFailed(job.id, f"loading {job.model_ref} cancelled", cancelled=True))
            return
        self._model = model
        self._thinking = bool(info.thinking)
        self._sessions.clear()  # prefix caches belong to the old model
        self._notify(ModelLoaded(job.id, info))

    def _run_generation(self, job: _GenerateJob) -> None:
        if self._model is None:
            self._notify(GenerationFailed(job.id, "no model is loaded"))
            return
        request = job.request
        session = None
        if request.conversation is not None:
            from ..generation.session import Session

            # One cache per thinking setting: a template may write the switch right at the start (Gemma 4 puts
            # `<|think|>` in a system turn after <bos>), so after a switch almost nothing of the conversation's
            # cache matches the new prompt. Switching back then continues from that setting's own cache
            # instead of encoding the whole conversation again. Templates without a switch share one cache.
            # The first turn under a setting starts from the other setting's cache, so a template that writes
            # the switch late (only in the generation prompt) loses nothing.
            think = bool(request.think) and self._thinking
            session = self._sessions.get((request.conversation, think))
            if session is None:
                other = self._sessions.get((request.conversation, not think))
                session = other.forked() if other is not None else Session()
                self._sessions[(request.conversation, think)] = session
        # Only what a request asks for is passed on, so stand-in generate functions need not know every option.
        extra = {"fill": request.fill} if request.fill is not None else {}
        if request.record:
            extra["record"] = True
        try:
            events = self._generate(
                self._model,
                messages=list(request.messages),
                settings=request.settings,
                think=request.think,
                cancel=job.cancel,
                session=session,
                progress=lambda event: self._notify(GenerationUpdate(job.id, event)),
                **extra,
            )
            for event in events:
                if isinstance(event, Step):
                    self.latest_frame = Frame(job.id, event)
                else:
                    self._notify(GenerationUpdate(job.id, event))
        except Exception as exc:
            if not isinstance(exc, EngineError):
                log.exception("generation failed")
            self._notify(GenerationFailed(job.id, error_line(exc)))


def error_line(exc: Exception) -> str:
    """An EngineError's own message; anything else as a short 'Type: first line' (the log has the rest)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, EngineError):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
