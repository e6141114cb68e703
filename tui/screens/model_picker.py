"""Choosing a model: the bundled demos first, checkpoints already in the Hugging Face cache, a server to connect
to, the real checkpoints users can download, or any folder / Hub id.

The picker only asks; the app loads (on the engine thread) and reports back through `show_progress`,
`show_error` and, once the model is ready, by closing the picker.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from engine.models.families import FAMILIES

from ..demo_models import REAL_CHECKPOINTS, bundled_demos, default_demo
from ..widgets.prompt import PathSuggester
from .dialogs import TextPromptScreen

DEMO_CHECKPOINT = default_demo()


@dataclass(frozen=True)
class ModelChoice:
    ref: str         # what engine.load takes: a folder or a Hub id
    title: str
    detail: str


def demo_choices() -> list[ModelChoice]:
    return [ModelChoice(str(card.path), f"{card.title} (bundled, works offline)", card.summary)
            for card in bundled_demos()]


def download_choices(cached: list[ModelChoice]) -> list[ModelChoice]:
    """The real checkpoints not already in the cache: picking one downloads it."""
    have = {choice.ref for choice in cached}
    return [ModelChoice(real.hub_id, real.hub_id, f"download {real.size} · needs {real.memory} of memory")
            for real in REAL_CHECKPOINTS if real.hub_id not in have]


# Not a checkpoint: the entry that asks for a server's address.
CONNECT_REF = "diffusion-chat:connect"


def connect_choice() -> ModelChoice:
    return ModelChoice(CONNECT_REF, "Connect to a server…",
                       "OpenAI-compatible: diffusion-chat serve (live frames), vLLM, SGLang, mlx-vlm, mlxcel")


def parse_server(text: str) -> tuple[str, str | None]:
    """"URL [API-KEY]" as typed into the connect dialog."""
    url, _, key = text.strip().partition(" ")
    return url, key.strip() or None


def cached_checkpoints(cache_dir: str | Path | None = None) -> list[ModelChoice]:
    """Models in the Hugging Face cache whose config.json names a family diffusion-chat runs.

    The newest snapshot of each repository decides; unreadable entries are skipped."""
    from huggingface_hub import constants, scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        # The cache folder as downloads see it now (scan_cache_dir's own default is fixed at import).
        cache = scan_cache_dir(cache_dir or constants.HF_HUB_CACHE)
    except (CacheNotFound, OSError):
        return []
    choices = []
    for repo in sorted(cache.repos, key=lambda r: r.repo_id.lower()):
        if repo.repo_type != "model" or not repo.revisions:
            continue
        newest = max(repo.revisions, key=lambda revision: revision.last_modified)
        family = _model_type(newest.snapshot_path / "config.json")
        if family in FAMILIES:
            choices.append(ModelChoice(repo.repo_id, repo.repo_id, f"{FAMILIES[family].label} · {repo.size_on_disk_str}"))
    return choices


def _model_type(config_path: Path) -> str | None:
    try:
        return json.loads(config_path.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None


class ModelPickerScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel / close")]

    class LoadRequested(Message):
        def __init__(self, ref: str):
            super().__init__()
            self.ref = ref

    class ConnectRequested(Message):
        def __init__(self, url: str, api_key: str | None):
            super().__init__()
            self.url, self.api_key = url, api_key

    class CancelRequested(Message):
        """Stop the download / load in progress."""

    def __init__(self, message: str = ""):
        super().__init__(classes="dialog-screen")
        self.initial_message = message
        # Not `loading`: that name is Textual's reactive that swaps a widget's content for a spinner, which
        # blurred the list and left Enter on Cancel (a second Enter cancelled the load).
        self.busy = False   # a load or a connection is under way
        self.choices: list[ModelChoice] = [*demo_choices(), connect_choice(), *download_choices([])]

    def compose(self) -> ComposeResult:
        # Scrolls to the focused control when the terminal is short; the load's status and errors sit at the
        # top, where the eye is.
        with VerticalScroll(can_focus=False, classes="dialog", id="model-picker"):
            yield Static("Choose a model", classes="dialog-title")
            yield Static(self.initial_message, id="load-status", markup=False,
                         classes="-error" if self.initial_message else "")
            progress = ProgressBar(id="load-progress", show_eta=False)
            progress.display = False
            yield progress
            yield OptionList(*self._options(), id="model-choices")
            yield Static("Scanning the Hugging Face cache…", id="cache-status", classes="dialog-hint")
            yield Input(placeholder="…or a checkpoint folder / Hugging Face id (org/name)", id="model-ref",
                        suggester=PathSuggester())
            with Horizontal(classes="dialog-buttons"):
                yield Button("Load", variant="primary", id="load")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        status = self.query_one("#load-status")
        status.display = bool(self.initial_message)
        self.query_one(OptionList).focus()
        self.call_after_refresh(self._status_in_view)
        self._scan_cache()

    def _status_in_view(self) -> None:
        """The reason the picker opened (or the last error) comes first, even where the dialog scrolls."""
        status = self.query_one("#load-status")
        if status.display:
            status.scroll_visible(animate=False, top=True)

    def _options(self) -> list[Option]:
        return [Option(Content(f"{choice.title}\n  {choice.detail}"), id=str(index))
                for index, choice in enumerate(self.choices)]

    @work(thread=True, exclusive=True)
    def _scan_cache(self) -> None:
        # Scanning touches every file of every cached repo: off the UI thread.
        found = cached_checkpoints()
        self.app.call_from_thread(self._show_cached, found)

    def _show_cached(self, found: list[ModelChoice]) -> None:
        if not self.is_mounted:
            return   # dismissed while the scan ran
        self.choices = [*demo_choices(), *found, connect_choice(), *download_choices(found)]
        option_list = self.query_one(OptionList)
        highlighted = option_list.highlighted
        option_list.set_options(self._options())
        option_list.highlighted = highlighted
        self.call_after_refresh(self._status_in_view)
        self.query_one("#cache-status", Static).update(
            f"{len(found)} supported checkpoint(s) in the Hugging Face cache" if found
            else "No supported checkpoints in the Hugging Face cache."
        )

    @on(OptionList.OptionSelected, "#model-choices")
    def _choice_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        ref = self.choices[int(event.option.id)].ref
        if ref == CONNECT_REF:
            self.ask_server()
        else:
            self.request_load(ref)

    def ask_server(self) -> None:
        self.app.push_screen(
            TextPromptScreen("Connect to an OpenAI-compatible server", placeholder="http://127.0.0.1:8000",
                             hint="URL, then optionally a space and its API key · Enter connects · Esc cancels"),
            lambda text: self.request_connect(*parse_server(text)) if text else None)

    def request_connect(self, url: str, api_key: str | None) -> None:
        if self.busy:
            return
        self._start_loading(f"Connecting to {url}… (Esc cancels)")
        self.post_message(self.ConnectRequested(url, api_key))

    @on(Input.Submitted, "#model-ref")
    def _ref_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._load_typed()

    @on(Button.Pressed, "#load")
    def _load_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self._load_typed()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_cancel()

    def _load_typed(self) -> None:
        ref = self.query_one("#model-ref", Input).value.strip()
        if ref:
            self.request_load(ref)
        else:
            self.show_error("Type a checkpoint folder or a Hugging Face id, or pick one above.")

    def request_load(self, ref: str) -> None:
        if self.busy:
            return
        self._start_loading(f"Loading {ref}… (Esc cancels)")
        self.post_message(self.LoadRequested(ref))

    def _start_loading(self, status: str) -> None:
        self.busy = True
        self.query_one("#load", Button).disabled = True
        progress = self.query_one(ProgressBar)
        progress.update(total=None, progress=0)
        progress.display = True
        self._status(status)

    def show_progress(self, done: int, total: int | None, description: str, stage: str = "download") -> None:
        self.query_one(ProgressBar).update(total=total, progress=done)
        if stage != "download":   # reading the weights, compiling kernels: the engine's own words
            self._status(f"{description[:1].upper()}{description[1:]}… (Esc cancels)")
            return
        size = f"{done / 2**20:.1f} MiB" + (f" of {total / 2**20:.1f} MiB" if total else "")
        self._status(f"Downloading {description}: {size} (Esc cancels)")

    def show_error(self, message: str) -> None:
        self.busy = False
        self.query_one("#load", Button).disabled = False
        self.query_one(ProgressBar).display = False
        self._status(message)
        self.query_one("#load-status").add_class("-error")

    def _status(self, text: str) -> None:
        status = self.query_one("#load-status", Static)
        status.remove_class("-error")
        status.update(text)
        status.display = bool(text)
        if text:
            status.scroll_visible(animate=False)

    def action_cancel(self) -> None:
        if self.busy:
            self.post_message(self.CancelRequested())
        else:
            self.dismiss(None)
