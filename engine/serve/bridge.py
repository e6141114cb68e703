"""The server's side of the one engine thread: requests go to `engine.thread.worker.EngineWorker` (which runs them one
at a time, in order), and each request's events come back to the asyncio handler that is streaming it.

Order matters for the live canvas: a frame of block k+1 must never be sent before the text of block k. The
engine thread reports `BlockCommitted(k)` before it writes any step of block k+1 into the frame slot, so the
events are put in a plain thread-safe queue at once (not scheduled onto the event loop, which would lag), and
a reader takes the slot's frame *first* and the queued events *second*: every commit that came before that
frame is then in hand (see `Ticket.next`).
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from ..events import (
    Finished,
    Frame,
    GenerationFailed,
    GenerationRequest,
    GenerationUpdate,
    LoadFailed,
    ModelInfo,
    ModelLoaded,
    WorkerEvent,
)
from ..thread.worker import EngineWorker
from .errors import APIError

# One prefix cache for the server: a chat client re-sends the whole conversation every turn, and the cache
# keeps its longest common prefix with the last prompt (any prompt is safe: the rest is encoded anew).
SERVER_CONVERSATION: Hashable = "diffusion-chat-serve"
# What a 503 asks a client to wait (seconds): about one short answer's time on a laptop.
RETRY_AFTER_S = 2


class LoadError(Exception):
    """The model could not be loaded at start-up (one line)."""


@dataclass
class Ticket:
    """One queued request: its job, the number of requests ahead of it, and its events as they come."""

    job: int
    ahead: int
    bridge: EngineBridge
    on_done: Callable[[], None] = lambda: None
    events: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    loop: asyncio.AbstractEventLoop | None = None

    def post(self, event: Any) -> None:
        """Engine thread: keep the event now, wake the reader on its loop."""
        self.events.put(event)
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.wake.set)

    async def next(self, timeout: float | None) -> tuple[Frame | None, list]:
        """Wait for events (at most `timeout` s); return the slot's frame of this job, then the events that came
        before it. The frame is None when the slot holds another job's."""
        if self.events.empty():
            try:
                await asyncio.wait_for(self.wake.wait(), timeout)
            except asyncio.TimeoutError:
                pass
        self.wake.clear()
        frame = self.bridge.worker.frame_for(self.job)
        events = []
        while not self.events.empty():
            events.append(self.events.get())
        return frame, events


class EngineBridge:
    """Owns the engine thread for the server's whole life; `load` once, then `submit` per request."""

    def __init__(self, make_worker: Callable[[Callable[[WorkerEvent], None]], EngineWorker] = EngineWorker,
                 max_queue: int = 16):
        self.max_queue = max_queue
        self.info: ModelInfo | None = None
        self._lock = threading.Lock()       # guards _tickets; held while a job is queued and registered
        self._tickets: dict[int, Ticket] = {}
        self._loaded = threading.Event()
        self._load_result: ModelLoaded | LoadFailed | None = None
        self.stopping = False               # set by `stop_all` (the server is shutting down)
        self.worker = make_worker(self._notify)

    def start(self) -> EngineBridge:
        self.worker.start()
        return self

    def load(self, model_ref: str) -> ModelInfo:
        self._loaded.clear()
        self.worker.load_model(model_ref)
        self._loaded.wait()
        result = self._load_result
        if isinstance(result, LoadFailed):
            raise LoadError(result.message)
        self.info = result.info
        return self.info

    @property
    def queued(self) -> int:
        """Requests waiting or running."""
        with self._lock:
            return len(self._tickets)

    def submit(self, request: GenerationRequest, on_done: Callable[[], None] = lambda: None) -> Ticket:
        """Queue a generation (503 when the queue is full). `on_done` runs once the job has ended on the
        engine thread (its images can go then)."""
        with self._lock:
            if self.stopping:
                raise APIError(503, "the server is shutting down", "server_shutting_down")
            if len(self._tickets) >= self.max_queue:
                raise APIError(503, f"the server is busy: {len(self._tickets)} requests are queued; try later",
                               "server_busy", headers={"Retry-After": str(RETRY_AFTER_S)})
            ahead = len(self._tickets)
            job = self.worker.generate(request)
            ticket = self._tickets[job] = Ticket(job, ahead, self, on_done, loop=asyncio.get_running_loop())
        return ticket

    def cancel(self, ticket: Ticket) -> None:
        """Stop the job within one denoising step; its last events are still delivered (and dropped)."""
        self.worker.cancel(ticket.job)

    def stop_all(self) -> int:
        """The server is shutting down: refuse new requests and cancel every queued or running job (each
        stops within one denoising step and ends with a cancelled `Finished`, which its stream closes with a
        finish chunk and `[DONE]`). Returns how many were cancelled. Event-loop thread."""
        self.stopping = True
        with self._lock:
            jobs = list(self._tickets)
        for job in jobs:
            self.worker.cancel(job)
        return len(jobs)

    def close(self) -> None:
        self.worker.close(timeout=5.0)
        with self._lock:
            tickets, self._tickets = list(self._tickets.values()), {}
        for ticket in tickets:
            ticket.on_done()

    def _notify(self, event: WorkerEvent) -> None:
        """Engine thread (see engine.thread.worker: must return quickly)."""
        if isinstance(event, (ModelLoaded, LoadFailed)):
            self._load_result = event
            self._loaded.set()
            return
        if not isinstance(event, (GenerationUpdate, GenerationFailed)):
            return
        with self._lock:
            ticket = self._tickets.get(event.job)
            ended = isinstance(event, GenerationFailed) or isinstance(event.event, Finished)
            if ended:
                self._tickets.pop(event.job, None)
        if ticket is not None:
            ticket.post(event)
            if ended:
                ticket.on_done()


class FrameThrottle:
    """At most `rate` frames a second, each frame once."""

    def __init__(self, rate: float):
        self.interval = 1.0 / rate
        self.last_sent = float("-inf")
        self.last_frame: Frame | None = None

    def due(self, frame: Frame | None, committed_block: int) -> bool:
        if frame is None or frame is self.last_frame or frame.step.block <= committed_block:
            return False
        now = time.monotonic()
        if now - self.last_sent < self.interval:
            return False
        self.last_sent, self.last_frame = now, frame
        return True
