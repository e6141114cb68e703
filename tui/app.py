"""diffusion-chat's Textual app: wires the engine thread, the saved conversations, the settings file and
the themes to the chat screen.

`run_app(AppOptions(...))` is what `diffusion-chat` (tui/cli.py) calls.

Threads: the app never runs MLX. An `engine.thread.worker.EngineWorker` thread loads the model and runs every
generation; its rare events arrive here as `EngineMessage`s (posted thread-safely onto the app's queue) and
go to the `ChatSession` (the turn logic), which reads the newest canvas frame straight from the worker's
slot on the chat screen's timer. The app only wires: worker, store, settings file, session and screens.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Iterable

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen

from engine.events import (
    GenerationFailed,
    GenerationUpdate,
    LoadFailed,
    LoadProgress,
    ModelInfo,
    ModelLoaded,
    WorkerEvent,
)
from engine.settings import Settings
from engine.thread.worker import EngineWorker
from themes import DEFAULT_THEME, canvas_variable_defaults
from themes.textual_themes import load_themes

from .session import ChatSession
from .commands import app_commands
from .model_switch import EngineMessage, ModelSwitch
from .config import ConfigError, load_config, save_config
from .screens.chat import ChatScreen
from .screens.conversations import (
    NEW_CONVERSATION,
    ConversationsScreen,
    delete_conversation,
    export_conversation,
    rename_conversation,
)
from .screens.help import HelpScreen
from .screens.interrupt import interrupt
from .demo_models import demo_card
from .screens.model_picker import ModelPickerScreen
from .remote import RemoteBackend
from .store import ConversationStore, StoreError, default_db_path
from .widgets.sampler_panel import SamplerPanel


@dataclass
class AppOptions:
    """What the command line passes to the app."""

    model: str | None = None        # folder or Hub id; None: the last model, else the picker
    # Sampler flags given on the command line (unset fields defer to the saved settings).
    settings: Settings = field(default_factory=Settings)
    images: list[str] = field(default_factory=list)   # attached to the first message
    think: bool = False
    server: str | None = None       # an OpenAI-compatible server to chat against instead (tui.remote)
    api_key: str | None = None      # its key (Authorization: Bearer)
    system_prompt: str | None = None                  # of every new conversation of this run


def run_app(options: AppOptions) -> int:
    app = DiffusionChatApp(options)
    app.run()
    return app.return_code or 0


WorkerFactory = Callable[[Callable[[WorkerEvent], None]], EngineWorker]
# (notify, url, api key) -> a backend with the engine worker's protocol, talking to a server
RemoteFactory = Callable[[Callable[[WorkerEvent], None], str, "str | None"], RemoteBackend]


class DiffusionChatApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "diffusion-chat"
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", priority=True),   # (shown: the chat screen places it)
                Binding("ctrl+c", "interrupt", show=False, system=True)]   # tui.screens.interrupt

    def __init__(self, options: AppOptions | None = None, *, make_worker: WorkerFactory | None = None,
                 make_remote: RemoteFactory | None = None):
        """`make_worker(notify)` builds the engine worker; tests pass one with a scripted generator.
        `make_remote(notify, url, api_key)` builds the backend for a server."""
        super().__init__()
        self.options = options or AppOptions()
        self._make_worker = make_worker or (lambda notify: EngineWorker(notify))
        self._make_remote = make_remote or (lambda notify, url, key: RemoteBackend(notify, url, key))
        # The local engine thread or a remote backend: the session and screens cannot tell which.
        self.engine_worker: EngineWorker | RemoteBackend | None = None
        self.model_info: ModelInfo | None = None  # what the engine thread says about the loaded model
        self.model_ref: str | None = None
        self._settings: dict[str, Settings] = {}  # family -> settings in use
        self.models = ModelSwitch(self)   # loads and connects, keeping what works until the new one is ready
        self._notices_shown: set[str] = set()
        loaded = load_config()
        self.config, self.config_error, self.config_path = loaded.config, loaded.error, loaded.path
        self.store, self.store_error = _open_store(self.config.trajectory_cap_bytes)
        self.session: ChatSession | None = None
        for theme in load_themes():
            self.register_theme(theme)

    # ---- start and stop -----------------------------------------------------------------------------

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # Textual's own themes lack the canvas colours our CSS uses.
        return canvas_variable_defaults()

    async def on_mount(self) -> None:
        self.theme = self.config.theme if self.config.theme in self.available_themes else DEFAULT_THEME
        if self.options.server:
            self.engine_worker = self._make_remote(self._post_event, self.options.server, self.options.api_key).start()
        else:
            self.engine_worker = self._make_worker(self._post_event).start()
        if self.config_error:
            self.notify(f"{self.config_error} — running on defaults; settings are not saved until it is fixed.",
                        severity="error", timeout=20, markup=False)
        if self.store_error:
            self.notify(f"{self.store_error} — conversations of this session are not saved.",
                        severity="error", timeout=20, markup=False)
        screen = ChatScreen(lambda view: ChatSession(
            self.store, self.engine_worker, view, self.settings_for, think=self.options.think or self.config.think,
            system_prompt=self.options.system_prompt, record=self.config.record_trajectories))
        self.session = screen.session
        await self.push_screen(screen)
        screen.show_canvas_mode(self.config.canvas_mode)
        screen.show_system_prompt(self.session.system_prompt)
        for path in self.options.images:
            screen.attach(path)
        if self.config.continue_last and not self.store_error and self.store.list():   # start where we left off
            await self._open_conversation(self.store.list()[0].id)
        if self.options.server:
            self.models.connect_first(self.options.model)
        elif self.options.model or self.config.model:
            self.models.load(self.options.model or self.config.model, saved=not self.options.model)
        else:
            self.push_screen(ModelPickerScreen())

    def _post_event(self, event: WorkerEvent) -> None:
        """The backend's thread: hand the event to the UI thread."""
        self.post_message(EngineMessage(event))

    def on_unmount(self) -> None:
        self.models.drop_pending()
        if self.engine_worker is not None:
            self.engine_worker.close(timeout=2.0)
        self.store.close()

    @property
    def chat(self) -> ChatScreen:
        return next(screen for screen in self.screen_stack if isinstance(screen, ChatScreen))

    # ---- model ----------------------------------------------------------------------------------------

    def load_model(self, ref: str) -> None:
        self.models.load(ref)

    def connect(self, url: str, api_key: str | None = None, model: str | None = None) -> None:
        self.models.connect(url, api_key, model)

    def _picker(self) -> ModelPickerScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, ModelPickerScreen)), None)

    @on(ModelPickerScreen.LoadRequested)
    def _load_requested(self, message: ModelPickerScreen.LoadRequested) -> None:
        self.load_model(message.ref)

    @on(ModelPickerScreen.ConnectRequested)
    def _connect_requested(self, message: ModelPickerScreen.ConnectRequested) -> None:
        self.connect(message.url, message.api_key)

    @on(ModelPickerScreen.CancelRequested)
    def _cancel_requested(self) -> None:
        self.models.cancel()

    async def on_engine_message(self, message: EngineMessage) -> None:
        if not self.is_running:
            return  # shutting down: the screens are already gone
        event, source = message.event, message.source
        if isinstance(event, (GenerationUpdate, GenerationFailed)):
            if source is None or source is self.engine_worker:
                await self.session.handle(event)
            return
        await self.models.handle(event, source)

    def _show_notices(self, model: ModelInfo) -> None:
        """Each of the engine's notices (e.g. a CPU without OpenBLAS, every step on MLX's reference BLAS) once
        per session, however many models are loaded."""
        for notice in model.notices:
            if notice not in self._notices_shown:
                self._notices_shown.add(notice)
                self.notify(notice, severity="warning", timeout=15, markup=False)

    async def _show_model(self) -> None:
        model = self.model_info
        settings = self.settings_for(model.family) if model else Settings()
        await self.chat.show_model(model, settings, self.config.canvas_mode)
        # A bundled demo answers only its tasks: the empty chat offers prompts it is measured to get right.
        card = demo_card(self.model_ref) if model is not None and self.model_ref else None
        await self.chat.show_examples(card.examples if card else ())

    def action_choose_model(self) -> None:
        if self._picker() is None:
            self.push_screen(ModelPickerScreen())

    # ---- settings -------------------------------------------------------------------------------------

    def settings_for(self, family: str) -> Settings:
        """The sampler settings the next turn of `family` uses: saved ones, with command-line flags on top."""
        if family not in self._settings:
            self._settings[family] = self.config.sampler_for(family).updated(self.options.settings)
        return self._settings[family]

    def remember_settings(self, family: str, settings: Settings) -> None:
        self._settings[family] = settings
        try:
            config = self.config.with_sampler(family, settings)
        except ConfigError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        self._set_config(samplers=config.samplers)

    @on(SamplerPanel.Changed)
    def _sampler_changed(self, event: SamplerPanel.Changed) -> None:
        if self.model_info is not None:
            self.remember_settings(self.model_info.family, event.settings)

    @on(SamplerPanel.CanvasModeChanged)
    def _canvas_mode_changed(self, event: SamplerPanel.CanvasModeChanged) -> None:
        self.set_canvas_mode(event.mode)

    def _set_config(self, **changes) -> None:
        """Change the settings and save them (unless the file on disk is broken: it stays untouched)."""
        self.config = dataclasses.replace(self.config, **changes)
        if self.config_error:
            return
        try:
            save_config(self.config, self.config_path)
        except ConfigError as exc:
            self.notify(str(exc), severity="error", markup=False)

    def watch_theme(self, theme: str) -> None:
        if theme != self.config.theme:
            self._set_config(theme=theme)

    def toggle_recording(self) -> None:
        """Whether answers record their denoising (saved; from the next answer)."""
        on = not self.config.record_trajectories
        self._set_config(record_trajectories=on)
        self.session.set_recording(on)
        self.notify(f"Recording the denoising {'on' if on else 'off'} (from the next answer).", markup=False)

    def set_canvas_mode(self, mode: str) -> None:
        """What the canvas shows for positions not yet accepted: "candidates" or "noise"."""
        self._set_config(canvas_mode=mode)
        # The panel's message can arrive after the chat screen is gone (the app closing right after a load).
        chat = next((s for s in self.screen_stack if isinstance(s, ChatScreen)), None)
        if chat is not None:
            chat.show_canvas_mode(mode)

    # ---- conversations --------------------------------------------------------------------------------

    def action_conversations(self) -> None:
        self.push_screen(ConversationsScreen(self.store), self._open_conversation)

    async def _open_conversation(self, conversation_id: int | None) -> None:
        if conversation_id == NEW_CONVERSATION:
            await self.session.open(None)
        elif conversation_id is not None:
            try:
                await self.session.open(conversation_id)
            except StoreError as exc:
                self.notify(str(exc), severity="error", markup=False)

    @on(ConversationsScreen.Renamed)
    def _renamed(self, message: ConversationsScreen.Renamed) -> None:
        self.session.renamed(message.conversation_id, message.title)

    @on(ConversationsScreen.Deleted)
    async def _deleted(self, message: ConversationsScreen.Deleted) -> None:
        await self.session.deleted(message.conversation_id)

    def _current_conversation(self) -> int | None:
        conversation_id = self.session.conversation_id
        if conversation_id is None:
            self.notify("This conversation is not saved yet: send a message first.", markup=False)
        return conversation_id

    def action_rename_conversation(self) -> None:
        conversation_id = self._current_conversation()
        if conversation_id is not None:
            rename_conversation(self.screen, self.store, conversation_id, self.session.renamed)

    def action_delete_conversation(self) -> None:
        conversation_id = self._current_conversation()
        if conversation_id is not None:
            delete_conversation(self.screen, self.store, conversation_id, self.session.deleted)

    def action_export_conversation(self) -> None:
        conversation_id = self._current_conversation()
        if conversation_id is not None:
            export_conversation(self.screen, self.store, conversation_id)

    def action_interrupt(self) -> None:
        interrupt(self)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    # ---- command palette --------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from app_commands(self)


def _open_store(trajectory_cap: int) -> tuple[ConversationStore, str | None]:
    """The conversation database; if it cannot be used, a throwaway in-memory one and the reason."""
    try:
        return ConversationStore(default_db_path(), trajectory_cap=trajectory_cap), None
    except StoreError as exc:
        return ConversationStore(":memory:", trajectory_cap=trajectory_cap), str(exc)
