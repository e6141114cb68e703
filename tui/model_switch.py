"""Changing the model or the server without losing the one that works: a load runs on the backend in use (the
local engine thread keeps its model until the new one is ready), a switch between local and a server runs
on a second backend that replaces the first only once its model is ready. A failed load says why at the top
of the picker and as a notice, and everything stays as it was."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from engine.events import LoadFailed, LoadProgress, ModelInfo, ModelLoaded, WorkerEvent
from engine.thread.worker import EngineWorker

from .remote import RemoteBackend
from .screens.model_picker import ModelPickerScreen

if TYPE_CHECKING:
    from .app import DiffusionChatApp


class EngineMessage(Message):
    """An event from the engine thread (see engine.thread.worker) or a server's backend, delivered on the UI thread;
    `source` is the backend it came from (two exist while a new one loads; None: the one in use)."""

    def __init__(self, event: WorkerEvent, source: object | None = None):
        super().__init__()
        self.event, self.source = event, source


@dataclass
class _Load:
    """A model being loaded (or a server being connected to): its job on `backend`; `ref` is saved on success."""

    job: int
    backend: EngineWorker | RemoteBackend
    ref: str | None
    saved: bool = False   # the model of the settings file, loaded at start


def load_activity(event: LoadProgress) -> str:
    """The status line while a model loads: what it does now and how far it got."""
    if event.stage != "download":
        return f"{event.description}…"
    if event.total_bytes:
        share = f"{100 * event.done_bytes / event.total_bytes:.0f}%"
    else:
        share = f"{event.done_bytes / 2**20:.1f} MiB"
    return f"downloading {event.description} {share}"


def absolute_ref(ref: str) -> str:
    """A folder as an absolute path (it is saved as the model to load next time, from any folder); a Hugging
    Face id as it is."""
    path = Path(ref).expanduser()
    return str(path.resolve()) if path.is_dir() else ref


class ModelSwitch:
    def __init__(self, app: DiffusionChatApp):
        self.app = app
        self._loading: _Load | None = None   # the load in progress, on the backend in use or on its successor

    def load(self, ref: str, saved: bool = False) -> None:
        """Load `ref` on the engine thread; the model that works stays until the new one is ready (a failed
        load keeps it). Progress arrives as EngineMessages."""
        if isinstance(self.app.engine_worker, RemoteBackend):
            backend = self._new_backend(None, None)   # the server stays until the local model is ready
            if backend is None:
                return
        else:
            self.drop_pending()
            backend = self.app.engine_worker
        ref = absolute_ref(ref)
        self._start_load(_Load(backend.load_model(ref), backend, ref, saved), f"loading {ref}…")

    def connect(self, url: str, api_key: str | None = None, model: str | None = None) -> None:
        """Chat against the server at `url` from now on (its model `model`, else its first). The backend in use
        (and the model it holds) stays until the server answered."""
        backend = self._new_backend(url, api_key or self.app.options.api_key)
        if backend is not None:
            # A server is not saved as the model to load next time (ref None).
            self._start_load(_Load(backend.load_model(model), backend, None), f"connecting to {backend.url}…")

    def connect_first(self, model: str | None) -> None:
        """`--server URL` at start: the backend in use is already that server's."""
        backend = self.app.engine_worker
        self._start_load(_Load(backend.load_model(model), backend, None), f"connecting to {backend.url}…")

    def cancel(self) -> None:
        if self._loading is not None:
            self._loading.backend.cancel(self._loading.job)

    async def handle(self, event: WorkerEvent, source: object | None) -> None:
        """A load's progress, its model, or why it failed."""
        app, load = self.app, self._loading
        if load is None or event.job != load.job or (source is not None and source is not load.backend):
            return  # a load that was replaced by a newer one
        picker = app._picker()
        if isinstance(event, LoadProgress):
            if picker is not None:
                picker.show_progress(event.done_bytes, event.total_bytes, event.description, event.stage)
            app.chat.show_activity(load_activity(event))
        elif isinstance(event, ModelLoaded):
            await self._loaded(load, event.info)
            if picker is not None:
                picker.dismiss()
        elif isinstance(event, LoadFailed):
            await self._load_failed(load, event, picker)

    def _start_load(self, load: _Load, activity: str) -> None:
        self._loading = load
        self.app.session.set_loading(activity)
        self.app.chat.show_activity(activity)

    def _new_backend(self, url: str | None, api_key: str | None) -> EngineWorker | RemoteBackend | None:
        """A second backend (a server's, or the local engine thread for url=None) that replaces the one in use
        once its model is ready; refused while an answer runs."""
        if self.app.session.generation is not None:
            self.app.notify("An answer is still being written; Esc cancels it first.", severity="warning")
            picker = self.app._picker()
            if picker is not None:
                picker.show_error("An answer is still being written; cancel it (Esc in the chat) first.")
            return None
        self.drop_pending()
        made: list = []

        def notify(event: WorkerEvent) -> None:   # the backend's thread
            self.app.post_message(EngineMessage(event, made[0] if made else None))

        backend = self.app._make_worker(notify) if url is None else self.app._make_remote(notify, url, api_key)
        made.append(backend)
        return backend.start()

    def drop_pending(self) -> None:
        """A load on a second backend that is not wanted any more: that backend goes."""
        load = self._loading
        if load is not None and load.backend is not self.app.engine_worker:
            load.backend.close(timeout=2.0)
            self._loading = None

    async def _loaded(self, load: _Load, info: ModelInfo) -> None:
        self._loading = None
        if load.backend is not self.app.engine_worker:
            self.app.engine_worker.close(timeout=2.0)
            self.app.engine_worker = load.backend
            self.app.session.set_backend(load.backend)
        self.app.model_info, self.app.model_ref = info, load.ref
        self.app.session.set_model(info)
        self.app.session.set_loading(None)
        if load.ref is not None:
            self.app._set_config(model=load.ref)
        await self.app._show_model()
        self.app._show_notices(info)

    async def _load_failed(self, load: _Load, event: LoadFailed, picker: ModelPickerScreen | None) -> None:
        """The model (or server) in use stays; the reason shows at the top of the picker and as a notice."""
        self._loading = None
        if load.backend is not self.app.engine_worker:
            load.backend.close(timeout=2.0)
        self.app.session.set_loading(None)
        await self.app._show_model()
        text = "Loading cancelled." if event.cancelled else event.message
        if load.saved and not event.cancelled:
            text = f"The last model ({load.ref}) cannot be loaded: {text}. Choose one below."
        if not event.cancelled:
            kept = f" — still using {self.app.model_info.name}" if self.app.model_info is not None else ""
            self.app.notify(f"{text}{kept}", severity="error", timeout=10, markup=False)
        if picker is not None:
            picker.show_error(text)
        elif self.app.model_info is None:   # nothing works: offer the choice
            self.app.push_screen(ModelPickerScreen(text))

