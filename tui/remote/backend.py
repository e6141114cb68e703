"""The remote backend: the app's chat against any OpenAI-compatible server, behind the same narrow protocol as
the local engine thread (engine.thread.worker.EngineWorker), so the chat session, screens and widgets cannot tell
which one runs.

* `load_model(name)` connects: `GET /v1/models`, then `ModelLoaded` with a remote `ModelInfo` (or
  `LoadFailed`, one line);
* `generate(request)` streams `POST /v1/chat/completions` and reports `GenerationUpdate`s (Started from
  `diffusion-chat serve` only, one BlockCommitted per committed block, Finished) or one `GenerationFailed`;
* frames (`diffusion-chat serve` only) go to `latest_frame`, as the engine thread's do;
* `cancel(job)` closes the stream at once (the server then stops the generation) and reports Finished
  "cancelled" with what was committed; nothing is ever retried.

The HTTP client (httpx; tui/remote/sse.py reads its event stream) runs on an asyncio loop of the backend's own
thread: the UI thread never waits on the network, and a cancel is a task cancellation, which closes the
connection immediately. `notify` is called on that thread and must return quickly (the app posts a message).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import Callable

import httpx

from engine.errors import EngineError
from engine.events import (
    Frame,
    GenerationFailed,
    GenerationRequest,
    GenerationUpdate,
    LoadFailed,
    ModelInfo,
    ModelLoaded,
    Step,
    WorkerEvent,
)

from . import sse
from .chunks import ChunkReader, StreamError
from .errors import http_error_line
from .requests import request_body
from .servers import ServerError, choose, model_infos

# Connecting and sending are quick or broken; a block of a big model on a slow machine can take minutes.
TIMEOUT = httpx.Timeout(10.0, read=600.0)


def api_base(url: str) -> str:
    """`http://host:8000`, `.../v1` or `.../v1/` -> `http://host:8000/v1`."""
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    return url if url.endswith("/v1") else url + "/v1"


class RemoteBackend:
    def __init__(self, notify: Callable[[WorkerEvent], None], url: str, api_key: str | None = None):
        self.url = api_base(url)
        self.latest_frame: Frame | None = None
        self.model: ModelInfo | None = None
        self._notify = notify
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # Texts of the token ids the frames carried (indexed by id): the remote ModelInfo's token_texts.
        self._texts: list[str] = []
        self._lock = threading.Lock()                # guards _next_id
        self._next_id = 1
        self._tasks: dict[int, asyncio.Task] = {}      # touched on the client's thread only
        self._loop = asyncio.new_event_loop()
        self._client: httpx.AsyncClient | None = None
        self._thread = threading.Thread(target=self._run_loop, name="diffusion-chat-remote", daemon=True)

    # ---- the backend protocol (any thread) ----------------------------------------------------------

    def start(self) -> RemoteBackend:
        self._thread.start()
        return self

    def load_model(self, model_name: str | None = None) -> int:
        """Connect and pick `model_name` (None or "": the server's first model)."""
        self._cancel_all()
        return self._submit(lambda job: self._connect(job, model_name),
                            lambda job: LoadFailed(job, f"connecting to {self.url} cancelled", cancelled=True))

    def generate(self, request: GenerationRequest) -> int:
        return self._submit(lambda job: self._generate(job, request),
                            lambda job: GenerationUpdate(job, ChunkReader().finished(cancelled=True)))

    def cancel(self, job: int) -> None:
        self._on_loop(lambda: self._tasks[job].cancel() if job in self._tasks else None)

    def forget(self, conversation) -> None:
        """Nothing to drop here: a server keeps (or not) its own caches."""

    def close(self, timeout: float = 5.0) -> None:
        if self._thread.is_alive():
            self._cancel_all()
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
            self._thread.join(timeout)

    def _cancel_all(self) -> None:
        self._on_loop(lambda: [task.cancel() for task in self._tasks.values()])

    def _on_loop(self, call) -> None:
        """Run `call` on the client's thread, after everything submitted before it (so a cancel always finds
        the task it is about)."""
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(call)

    def _submit(self, make_work, cancelled_event) -> int:
        """Start `make_work(job)` as a task on the client's thread. A task cancelled before it ran at all
        still reports its end (`cancelled_event(job)`), so every job ends with an event."""
        with self._lock:
            job = self._next_id
            self._next_id += 1

        def finished(task: asyncio.Task) -> None:
            self._tasks.pop(job, None)
            if task.cancelled():
                self._notify(cancelled_event(job))

        def start() -> None:
            task = self._tasks[job] = self._loop.create_task(make_work(job))
            task.add_done_callback(finished)

        self._on_loop(start)
        return job

    # ---- the client's thread --------------------------------------------------------------------------

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._client = httpx.AsyncClient(timeout=TIMEOUT, headers=self._headers)
        self._loop.run_forever()
        self._loop.close()

    async def _shutdown(self) -> None:
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        await self._client.aclose()
        self._loop.stop()

    async def _connect(self, job: int, model_name: str | None) -> None:
        try:
            async with self._client.stream("GET", f"{self.url}/models") as response:
                if response.status_code != 200:
                    raise ServerError(http_error_line(response.status_code, await _error_body(response)))
                content = await sse.body(response.aiter_bytes(), sse.MAX_BODY_BYTES)
            try:
                listing = sse.loads(content)
            except (ValueError, UnicodeDecodeError):
                raise ServerError("its /v1/models answer is not JSON (is this an OpenAI-compatible server?)")
            info = choose(model_infos(listing, self._texts), model_name)
        except asyncio.CancelledError:
            self._notify(LoadFailed(job, f"connecting to {self.url} cancelled", cancelled=True))
            return
        except (ServerError, sse.TooLarge, httpx.HTTPError) as exc:
            self._notify(LoadFailed(job, f"cannot use {self.url}: {_line(exc)}"))
            return
        except Exception as exc:  # noqa: BLE001 - whatever a reply did, the load ends with one line
            self._notify(LoadFailed(job, f"cannot use {self.url}: {type(exc).__name__}: {_line(exc)}"))
            return
        if info.frames:
            info = dataclasses.replace(info, label=f"{info.label} (remote)")
        self.model = info
        self._notify(ModelLoaded(job, info))

    async def _generate(self, job: int, request: GenerationRequest) -> None:
        reader = ChunkReader(on_frame=lambda step, texts: self._show_frame(job, step, texts))
        try:
            if self.model is None:
                raise StreamError("not connected to a server")
            await self._stream(job, request_body(request, self.model), reader)
        except asyncio.CancelledError:
            self._notify(GenerationUpdate(job, reader.finished(cancelled=True)))
            return
        except (StreamError, EngineError, sse.TooLarge) as exc:
            self._notify(GenerationFailed(job, str(exc)))
            return
        except httpx.HTTPError as exc:
            self._notify(GenerationFailed(job, f"the connection to {self.url} failed: {_line(exc)}"))
            return
        except Exception as exc:  # noqa: BLE001 - a turn always ends: a reply nothing foresaw is one line too
            self._notify(GenerationFailed(job, f"the server's reply could not be read ({type(exc).__name__}: "
                                               f"{_line(exc)[:120]})"))
            return
        self._notify(GenerationUpdate(job, reader.finished()))

    async def _stream(self, job: int, body: dict, reader: ChunkReader) -> None:
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
        async with self._client.stream("POST", f"{self.url}/chat/completions", json=body,
                                       headers=headers) as response:
            if response.status_code != 200:
                raise StreamError(http_error_line(response.status_code, await _error_body(response)))
            kind = response.headers.get("content-type", "").partition(";")[0].strip()
            if kind != "text/event-stream":
                raise StreamError(f"the server answered with {kind or 'no content type'}, not an event stream")
            async for data in sse.events(response.aiter_bytes()):
                data = data.strip()
                if data == "[DONE]":
                    break
                if not data:
                    continue
                try:
                    payload = sse.loads(data)
                except ValueError as exc:
                    raise StreamError(f"the server sent a chunk that is not JSON ({_line(exc)[:80]}): "
                                      f"{data[:80]}") from None
                for update in reader.feed(payload):
                    self._notify(GenerationUpdate(job, update))
        if reader.finish_reason is None and reader.engine_finish is None:
            raise StreamError("the server ended the stream before the answer finished")

    def _show_frame(self, job: int, step: Step, texts: dict[int, str]) -> None:
        """Learn the frame's token texts first, then publish it: a reader of the slot finds every text."""
        table = self._texts
        if texts:
            highest = max(texts)
            if highest >= len(table):
                table.extend([""] * (highest + 1 - len(table)))
            for token, text in texts.items():
                if token >= 0:
                    table[token] = text
        self.latest_frame = Frame(job, step)


async def _error_body(response: httpx.Response) -> bytes:
    """The start of an error body (its first line is all that is shown)."""
    read = bytearray()
    async for chunk in response.aiter_bytes():
        read += chunk
        if len(read) >= sse.MAX_ERROR_BYTES:
            break
    return bytes(read[:sse.MAX_ERROR_BYTES])


def _line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
