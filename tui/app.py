"""diffusion-chat's Textual app: wires the engine thread, the saved conversations, the settings file and
the themes to the chat screen.

`run_app(AppOptions(...))` is what `diffusion-chat` (tui/cli.py) calls.

Threads: the app never runs MLX. An `engine.worker.EngineWorker` thread loads the model and runs every
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
from engine.worker import EngineWorker
from themes import DEFAULT_THEME, THEME_NAMES, canvas_variable_defaults
from themes.textual_themes import load_themes

from .chat_session import ChatSession
from .config import ConfigError, load_config, save_config
from .screens.chat import ChatScreen
from .screens.conversations import (
    ConversationsScreen,
    delete_conversation,
    export_conversation,
    rename_conversation,
)
from .screens.help import HelpScreen
from .screens.model_picker import ModelPickerScreen
from .store import ConversationStore, StoreError, default_db_path
from .widgets.canvas import CANVAS_MODES
from .widgets.sampler_panel import SamplerPanel


@dataclass
class AppOptions:
    """What the command line passes to the app."""

    model: str | None = None        # folder or Hub id; None: the last model, else the picker
    # Sampler flags given on the command line (unset fields defer to the saved settings).
    settings: Settings = field(default_factory=Settings)
    images: list[str] = field(default_factory=list)   # attached to the first message
    think: bool = False
    system_prompt: str | None = None                  # of every new conversation of this run


def run_app(options: AppOptions) -> int:
    app = DiffusionChatApp(options)
    app.run()
    return app.return_code or 0


class EngineMessage(Message):
    """An event from the engine thread (see engine.worker), delivered on the UI thread."""

    def __init__(self, event: WorkerEvent):
        super().__init__()
        self.event = event


WorkerFactory = Callable[[Callable[[WorkerEvent], None]], EngineWorker]


class DiffusionChatApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "diffusion-chat"

    def __init__(self, options: AppOptions | None = None, *, make_worker: WorkerFactory | None = None):
        """`make_worker(notify)` builds the engine worker; tests pass one with a scripted generator."""
        super().__init__()
        self.options = options or AppOptions()
        self._make_worker = make_worker or (lambda notify: EngineWorker(notify))
        self.engine_worker: EngineWorker | None = None
        self.model_info: ModelInfo | None = None  # what the engine thread says about the loaded model
        self.model_ref: str | None = None
        self._settings: dict[str, Settings] = {}  # family -> settings in use
        self._load_job: int | None = None
        loaded = load_config()
        self.config, self.config_error, self.config_path = loaded.config, loaded.error, loaded.path
        self.store, self.store_error = _open_store()
        self.session: ChatSession | None = None
        for theme in load_themes():
            self.register_theme(theme)

    # ---- start and stop -----------------------------------------------------------------------------

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # Textual's own themes lack the canvas colours our CSS uses.
        return canvas_variable_defaults()

    async def on_mount(self) -> None:
        self.theme = self.config.theme if self.config.theme in self.available_themes else DEFAULT_THEME
        self.engine_worker = self._make_worker(lambda event: self.post_message(EngineMessage(event))).start()
        if self.config_error:
            self.notify(f"{self.config_error} — running on defaults; settings are not saved until it is fixed.",
                        severity="error", timeout=20, markup=False)
        if self.store_error:
            self.notify(f"{self.store_error} — conversations of this session are not saved.",
                        severity="error", timeout=20, markup=False)
        self.session = ChatSession(self.store, self.engine_worker, None, self.settings_for,
                                   think=self.options.think or self.config.think,
                                   system_prompt=self.options.system_prompt)
        screen = ChatScreen(self.session)
        self.session.view = screen
        await self.push_screen(screen)
        screen.show_canvas_mode(self.config.canvas_mode)
        screen.show_system_prompt(self.session.system_prompt)
        for path in self.options.images:
            screen.attach(path)
        ref = self.options.model or self.config.model
        if ref:
            self.load_model(ref)
        else:
            self.push_screen(ModelPickerScreen())

    def on_unmount(self) -> None:
        if self.engine_worker is not None:
            self.engine_worker.close(timeout=2.0)
        self.store.close()

    @property
    def chat(self) -> ChatScreen:
        return next(screen for screen in self.screen_stack if isinstance(screen, ChatScreen))

    # ---- model ----------------------------------------------------------------------------------------

    def load_model(self, ref: str) -> None:
        """Unload the current model and load `ref` on the engine thread; progress arrives as EngineMessages."""
        self.model_info = self.session.model = None
        self.model_ref = ref
        self._load_job = self.engine_worker.load_model(ref)
        self.chat.status_bar.set_model(None)
        self.chat.show_activity(f"loading {ref}…")

    def _picker(self) -> ModelPickerScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, ModelPickerScreen)), None)

    @on(ModelPickerScreen.LoadRequested)
    def _load_requested(self, message: ModelPickerScreen.LoadRequested) -> None:
        self.load_model(message.ref)

    @on(ModelPickerScreen.CancelRequested)
    def _cancel_requested(self) -> None:
        if self._load_job is not None:
            self.engine_worker.cancel(self._load_job)

    async def on_engine_message(self, message: EngineMessage) -> None:
        if not self.is_running:
            return  # shutting down: the screens are already gone
        event = message.event
        if isinstance(event, (GenerationUpdate, GenerationFailed)):
            await self.session.handle(event)
            return
        if event.job != self._load_job:
            return  # a load that was replaced by a newer one
        picker = self._picker()
        if isinstance(event, LoadProgress):
            if picker is not None:
                picker.show_progress(event.done_bytes, event.total_bytes, event.description)
            if event.total_bytes:
                share = f"{100 * event.done_bytes / event.total_bytes:.0f}%"
            else:
                share = f"{event.done_bytes / 2**20:.1f} MiB"
            self.chat.show_activity(f"downloading {event.description} {share}")
        elif isinstance(event, ModelLoaded):
            self._load_job = None
            self.model_info = self.session.model = event.info
            self._set_config(model=self.model_ref)
            await self._show_model()
            if picker is not None:
                picker.dismiss()
        elif isinstance(event, LoadFailed):
            self._load_job = None
            await self._show_model()
            text = "Loading cancelled." if event.cancelled else event.message
            if picker is not None:
                picker.show_error(text)
            else:
                self.push_screen(ModelPickerScreen(text))

    async def _show_model(self) -> None:
        model = self.model_info
        settings = self.settings_for(model.family) if model else Settings()
        await self.chat.show_model(model, settings, self.config.canvas_mode)

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

    def set_canvas_mode(self, mode: str) -> None:
        """What the canvas shows for positions not yet accepted: "candidates" or "noise"."""
        self._set_config(canvas_mode=mode)
        self.chat.show_canvas_mode(mode)

    # ---- conversations --------------------------------------------------------------------------------

    def action_conversations(self, search: bool = False) -> None:
        self.push_screen(ConversationsScreen(self.store, focus_search=search), self._open_conversation)

    async def _open_conversation(self, conversation_id: int | None) -> None:
        if conversation_id is not None:
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

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    # ---- command palette --------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        chat = self.chat
        yield SystemCommand("New conversation", "Start an empty conversation", chat.action_new_conversation)
        yield SystemCommand("Conversations", "Open, rename, delete or export saved conversations",
                            self.action_conversations)
        yield SystemCommand("Search conversations", "Full-text search over every saved message",
                            lambda: self.action_conversations(search=True))
        yield SystemCommand("Rename conversation", "Give this conversation a new title",
                            self.action_rename_conversation)
        yield SystemCommand("Delete conversation", "Delete this conversation", self.action_delete_conversation)
        yield SystemCommand("Export conversation", "Write this conversation to a Markdown file",
                            self.action_export_conversation)
        yield SystemCommand("Choose model", "Load another checkpoint (folder, Hub id or cached)",
                            self.action_choose_model)
        yield SystemCommand("Sampler panel", "Show or hide the sampler settings", chat.action_toggle_sampler)
        yield SystemCommand("Thinking on/off", "Let the model think first in this conversation",
                            chat.action_toggle_thinking)
        yield SystemCommand("Attach image", "Attach an image file to the next message", chat.action_attach_image)
        yield SystemCommand("Copy last answer", "Copy the last answer to the clipboard", chat.action_copy_answer)
        yield SystemCommand("Copy code block", "Copy the next code block of the last (or focused) answer",
                            chat.action_copy_code)
        yield SystemCommand("Copy reasoning", "Copy the reasoning of the last (or focused) answer",
                            chat.action_copy_reasoning)
        yield SystemCommand("Regenerate answer", "Write the last answer again with the current settings (a revision)",
                            chat.action_regenerate)
        yield SystemCommand("Previous revision", "Show the previous revision of the last (or focused) answer",
                            lambda: chat.action_switch_revision(-1))
        yield SystemCommand("Next revision", "Show the next revision of the last (or focused) answer",
                            lambda: chat.action_switch_revision(1))
        yield SystemCommand("Compare revisions", "The answer's revisions side by side: settings, steps, time",
                            chat.action_compare_revisions)
        yield SystemCommand("Edit last message", "Edit your last message and resend it (a new branch)",
                            chat.action_edit_last_message)
        yield SystemCommand("System prompt", "Set or remove this conversation's system prompt",
                            chat.action_system_prompt)
        for mode in CANVAS_MODES:
            yield SystemCommand(f"Canvas: show {mode}", f"Positions not yet accepted show the {mode}",
                                lambda mode=mode: self.set_canvas_mode(mode))
        for name in THEME_NAMES:
            yield SystemCommand(f"Theme: {name}", f"Switch to the {name} theme",
                                lambda name=name: setattr(self, "theme", name))
        yield SystemCommand("Help", "Keys and what the canvas shows", self.action_help)


def _open_store() -> tuple[ConversationStore, str | None]:
    """The conversation database; if it cannot be used, a throwaway in-memory one and the reason."""
    try:
        return ConversationStore(default_db_path()), None
    except StoreError as exc:
        return ConversationStore(":memory:"), str(exc)
