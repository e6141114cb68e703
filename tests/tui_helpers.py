"""Helpers for the app tests (tests/test_tui_*.py): isolated folders, waiting, sending a prompt."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import AsyncIterator

import numpy as np
import pytest

from engine.events import BlockCommitted, Finished, Started, Stats, Step
from engine.settings import Settings
from engine.thread.worker import EngineWorker
from tui.app import AppOptions, DiffusionChatApp

CHECKPOINTS = Path(__file__).parent / "fixtures" / "checkpoints"
IMAGES = Path(__file__).parent / "fixtures" / "golden" / "dg_vision"
TIMEOUT_S = 30
# Small enough that a whole answer takes well under a second on the tiny checkpoints.
QUICK = dict(max_tokens=48, max_denoising_steps=6)


@pytest.fixture
def app_env(tmp_path, monkeypatch):
    """Point the conversation database, the settings file and the HF cache at `tmp_path`."""
    import huggingface_hub.constants

    monkeypatch.setenv("DIFFUSION_CHAT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DIFFUSION_CHAT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "hf-cache").mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def make_app(checkpoint: str | None = "dg_text", think: bool = False, make_worker=None, **settings) -> DiffusionChatApp:
    model = str(CHECKPOINTS / checkpoint) if checkpoint else None
    options = AppOptions(model=model, settings=Settings(**{**QUICK, **settings}), think=think)
    return DiffusionChatApp(options, make_worker=make_worker)


async def wait_for(pilot, condition, what: str, timeout: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.01)


async def wait_for_screen(pilot, kind: type, what: str):
    """The top screen is a `kind` and has mounted. Textual puts a pushed screen on the stack before it composes
    its children, so a query straight after `isinstance(app.screen, kind)` can find nothing."""
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, kind) and pilot.app.screen.is_mounted, what)
    return pilot.app.screen


async def wait_for_model(pilot) -> None:
    # The screen's own state (its panel rebuilt for the model), not just the app having heard of it.
    await wait_for(pilot, lambda: pilot.app.model_info is not None and pilot.app.chat.shown_model is pilot.app.model_info,
                   "the model to load")


async def send(pilot, text: str) -> None:
    """Type `text` into the prompt and press Enter; returns once the answer has started (or already ended)."""
    from tui.widgets.messages import AssistantMessage

    chat, session = pilot.app.chat, pilot.app.session
    answers = len(chat.query(AssistantMessage))

    def started() -> bool:
        # The new answer's widget is mounted before its generation is registered: wait for the generation
        # (or, for a very quick one, its end), not just for the widget.
        shown = chat.query(AssistantMessage)
        return len(shown) > answers and (session.generation is not None or shown.last().finished)

    chat.prompt.focus()
    chat.prompt.value = text
    await pilot.press("enter")
    await wait_for(pilot, started, "the answer to start")


async def wait_for_answer(pilot) -> None:
    """Until the newest answer has finished (its own state, not the absence of a generation)."""
    from tui.widgets.messages import AssistantMessage

    chat = pilot.app.chat
    await wait_for(pilot, lambda: chat.query(AssistantMessage).last().finished, "the answer to finish")
    await pilot.pause()


def notices(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


# ---- scripted answers: a `generate` the test drives block by block ------------------------------------


def scripted_step(block: int, step: int) -> Step:
    length = 8
    return Step(block=block, step=step, max_steps=4, canvas=np.full(length, 5, np.int32),
                candidates=np.full(length, 6, np.int32), accepted=np.arange(length) < 2 * (step + 1),
                newly_accepted=2, scores=np.linspace(0, 3, length).astype(np.float32), score_kind="entropy",
                temperature=1.0, noise_is_mask=False)


def scripted_block(block: int, content: str = "", reasoning: str = "") -> BlockCommitted:
    return BlockCommitted(block=block, token_ids=(7,) * 8, committed=(7,) * 8, content_delta=content,
                          reasoning_delta=reasoning, steps=4, stop_reason="max_denoising_steps",
                          accepted_per_step=(2, 2, 2, 2))


class ScriptedAnswer:
    """A `generate` that writes reasoning, then an answer, one block per `advance()` from the test."""

    def __init__(self, blocks: list[BlockCommitted], fail_first: Exception | None = None):
        self.blocks = blocks
        self.fail_first = fail_first
        self.gate = threading.Semaphore(0)
        self.calls = []

    def advance(self) -> None:
        self.gate.release()

    def __call__(self, model, messages, settings, think, cancel, session, progress=None, **options):
        # (options: `record`, which a scripted answer ignores: it has no trajectory to give)
        self.calls.append(messages)
        if self.fail_first is not None and len(self.calls) == 1:
            raise self.fail_first
        yield Started(prompt_tokens=5, encoded_tokens=5, prefill_s=0.0, block_length=8)
        for block in self.blocks:
            for step in range(4):
                yield scripted_step(block.block, step)
            self.gate.acquire(timeout=30)
            yield block
        content = "".join(b.content_delta for b in self.blocks)
        reasoning = "".join(b.reasoning_delta for b in self.blocks)
        stats = Stats(steps_per_block=(4,) * len(self.blocks), prompt_tokens=5, generated_tokens=8 * len(self.blocks),
                      work_tokens=32, prefill_s=0.0, denoise_s=0.01, total_s=0.02, peak_memory_bytes=0)
        yield Finished("stop", (7,) * 8 * len(self.blocks), content, reasoning, stats)


async def scripted_turn(pilot, script: ScriptedAnswer, text: str) -> None:
    """Send `text` and let `script` write each of its blocks; returns once the answer has finished."""
    await send(pilot, text)
    for _ in script.blocks:
        script.advance()
    await wait_for_answer(pilot)


def scripted_worker(script: ScriptedAnswer):
    # The real loader (the tokenizer of the tiny checkpoint draws the canvas), a scripted answer.
    return lambda notify: EngineWorker(notify, generate=script)


# ---- recorded trajectories (tests/fixtures/trajectories, made by its record.py) -------------------------

TRAJECTORIES = Path(__file__).parent / "fixtures" / "trajectories"


def seed_recorded_answer(store_path, trajectory: str, question: str = "Fill this in.") -> int:
    """A conversation whose one answer carries the recorded trajectory file `trajectory` (fixed clock)."""
    from engine.recording.trajectory import decode
    from tui.store import ConversationStore

    data = (TRAJECTORIES / trajectory).read_bytes()
    meta = decode(data).meta
    stats = {"finish_reason": meta["finish_reason"]}
    if meta["filled_spans"]:
        stats.update(fill="fill", filled_spans=meta["filled_spans"])
    with ConversationStore(store_path, clock=lambda: 1_700_000_000.0) as store:
        conversation = store.create("A recorded answer", meta["model"])
        store.add_message(conversation.id, "user", question)
        message = store.add_message(conversation.id, "assistant", meta["content"], stats=stats)
        assert store.save_trajectory(store.revisions(message.id)[0].id, data)
        return conversation.id


@contextlib.asynccontextmanager
async def open_replay(trajectory: str, size: tuple[int, int], question: str = "hi") -> AsyncIterator[tuple]:
    """The app at `size` showing the replay view of a saved answer recorded as `trajectory`: yields (pilot,
    the ReplayScreen). The conversation is saved before the app starts, as a user's would be."""
    from tui.screens.replay import ReplayScreen
    from tui.store import default_db_path

    conversation = seed_recorded_answer(default_db_path(), trajectory, question)
    app = make_app("dg_text")
    async with app.run_test(size=size) as pilot:
        await wait_for_model(pilot)
        await app.session.open(conversation)
        await pilot.pause()
        await pilot.press("ctrl+r")
        await wait_for_screen(pilot, ReplayScreen, "the replay view")
        yield pilot, app.screen


def engine_events(app, monkeypatch, kind) -> list:
    """The engine events of type `kind` (Started, Finished) of the app's generations from now on (the session's
    handler, wrapped)."""
    seen = []
    handle = app.session.handle

    async def recording(update):
        if isinstance(getattr(update, "event", None), kind):
            seen.append(update.event)
        await handle(update)

    monkeypatch.setattr(app.session, "handle", recording)
    return seen


def paced_worker(notify, pause_s: float = 0.04, hold: threading.Event | None = None):
    """The real engine, pausing after each step: the UI's 30 Hz timer draws frames of even a quick run, and a key
    pressed mid-generation reaches the worker before a tiny model has finished. With `hold`, the first step waits
    until the test sets it, so a test that must see a live frame does not race a loaded machine's scheduler."""
    import engine
    from engine.events import Step
    from engine.thread.worker import EngineWorker

    def generate(*args, **options):
        for event in engine.generate(*args, **options):
            yield event
            if isinstance(event, Step):
                if hold is not None:
                    hold.wait(timeout=60)
                time.sleep(pause_s)

    return EngineWorker(notify, generate=generate)
