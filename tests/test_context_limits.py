"""Every request is checked against the model's context before any work (engine.generation.context, engine.generation.api); the app
counts the next prompt's tokens as you type and refuses before sending, and the engine's own refusal reaches
the transcript as a failed answer."""

from __future__ import annotations

import json
import shutil
import threading
import time

import numpy as np
import pytest
from PIL import Image

import engine
from conftest import CHECKPOINTS
from engine.generation.context import fit_max_tokens
from engine.errors import InputError, SettingsError
from engine.events import Finished, GenerationFailed, GenerationRequest, GenerationUpdate, ModelInfo
from engine.settings import Settings, flag
from engine.thread.worker import EngineWorker
from tui_helpers import app_env, make_app, notices, wait_for, wait_for_model  # noqa: F401  (app_env: fixture)


def small_context_copy(tmp_path, name: str, context: int):
    """A fixture checkpoint whose config allows only `context` positions."""
    folder = tmp_path / f"{name}-ctx{context}"
    shutil.copytree(CHECKPOINTS / name, folder)
    config = json.loads((folder / "config.json").read_text())
    (config["text_config"] if "text_config" in config else config)["max_position_embeddings"] = context
    (folder / "config.json").write_text(json.dumps(config))
    return folder


# ---- the rule ---------------------------------------------------------------------------------------------------


def test_the_rule_refuses_a_prompt_that_fills_the_context_naming_both_numbers():
    with pytest.raises(InputError, match=r"the prompt is 101,000 tokens but the model's context is 32,768 tokens"):
        fit_max_tokens(101_000, 256, False, 32_768)
    with pytest.raises(InputError):
        fit_max_tokens(32_768, 1, False, 32_768)  # no room left for a single answer token


def test_the_rule_refuses_a_chosen_max_tokens_that_does_not_fit_and_clamps_the_default():
    with pytest.raises(SettingsError) as error:
        fit_max_tokens(30_000, 4_096, True, 32_768)
    assert error.value.render(flag) == ("the prompt (30,000 tokens) plus --max-tokens (4,096) is 34,096 tokens, more "
                                        "than the model's context of 32,768; set --max-tokens to at most 2,768 or "
                                        "shorten the prompt")
    assert fit_max_tokens(30_000, 4_096, False, 32_768) == 2_768
    assert fit_max_tokens(100, 256, True, 32_768) == 256
    assert fit_max_tokens(10**6, 256, True, None) == 256  # a model without a known context


# ---- the engine -------------------------------------------------------------------------------------------------


def test_model_info_carries_each_family_s_context():
    assert engine.load(CHECKPOINTS / "dg_text").info().context_length == 262_144   # text_config.max_position_embeddings
    assert engine.load(CHECKPOINTS / "llada2").info().context_length == 32_768     # max_position_embeddings


def test_a_prompt_far_beyond_the_context_is_refused_before_any_work():
    model = engine.load(CHECKPOINTS / "llada2")
    began = time.perf_counter()
    with pytest.raises(InputError, match=r"101,000 tokens .* 32,768 tokens"):
        next(engine.generate(model, prompt_ids=[5] * 101_000))
    assert time.perf_counter() - began < 5   # the old engine started encoding it (and ran for minutes)


@pytest.mark.parametrize("name", ["dg_text", "llada2"])
def test_prompt_plus_max_tokens_refused_when_chosen_clamped_when_default(tmp_path, name):
    model = engine.load(small_context_copy(tmp_path, name, 160))
    prompt = [int(t) for t in np.random.default_rng(0).integers(3, 480, 150)]
    with pytest.raises(SettingsError, match=r"prompt \(150 tokens\) plus max_tokens \(64\) is 214 tokens.*160"):
        next(engine.generate(model, prompt_ids=prompt, settings=Settings(max_tokens=64)))
    # The checkpoint's default (256) is nobody's choice: it shrinks to the 10 positions left.
    events = list(engine.generate(model, prompt_ids=prompt, settings=Settings(max_denoising_steps=2)))
    finished = events[-1]
    assert isinstance(finished, Finished) and len(finished.token_ids) <= 10


def test_the_cli_names_the_flag_and_the_numbers(tmp_path, capsys):
    from tui.cli import main

    folder = small_context_copy(tmp_path, "llada2", 64)
    code = main(["generate", "--model", str(folder), "--prompt", "hello", "--max-tokens", "60"])
    error = capsys.readouterr().err.strip()
    assert code == 1 and error.startswith("diffusion-chat: error: the prompt (") and "--max-tokens (60)" in error
    assert "context of 64" in error and len(error.splitlines()) == 1


def test_count_tokens_is_the_engine_s_own_prompt_length(tmp_path):
    model = engine.load(CHECKPOINTS / "dg_vision")
    info = model.info()
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sky blue? " * 9}]
    assert info.count_tokens(messages, False) == len(model.tokenizer.prepare_chat(messages).ids)
    assert info.count_tokens(messages, True) == len(model.tokenizer.prepare_chat(messages, think=True).ids)
    path = tmp_path / "photo.png"
    Image.fromarray(np.zeros((200, 300, 3), dtype=np.uint8)).save(path)
    with_image = [{"role": "user", "content": [{"type": "image", "path": str(path)}, {"type": "text", "text": "hi"}]}]
    prepared = model.tokenizer.prepare_chat(with_image, processor=model.processor)
    assert info.count_tokens(with_image, False) == len(prepared.ids)


def test_count_tokens_runs_on_another_thread_while_the_engine_thread_holds_the_model():
    info = engine.load(CHECKPOINTS / "llada2").info()
    counts = []
    thread = threading.Thread(target=lambda: counts.append(info.count_tokens([{"role": "user", "content": "hi " * 50}],
                                                                             False)))
    thread.start()
    thread.join()
    assert counts and counts[0] > 50


def test_the_worker_reports_the_engine_s_refusal_and_keeps_serving(tmp_path):
    events, done = [], threading.Event()

    def notify(event):
        events.append(event)
        if isinstance(event, (GenerationFailed, GenerationUpdate)) and (
                isinstance(event, GenerationFailed) or isinstance(event.event, Finished)):
            done.set()

    worker = EngineWorker(notify).start()
    try:
        worker.load_model(str(small_context_copy(tmp_path, "llada2", 64)))
        for text in ("word " * 80, "hi"):
            done.clear()
            worker.generate(GenerationRequest(({"role": "user", "content": text},), Settings(max_denoising_steps=2)))
            assert done.wait(60)
    finally:
        worker.close()
    failed = [e for e in events if isinstance(e, GenerationFailed)]
    assert len(failed) == 1 and "the model's context is 64 tokens" in failed[0].message
    assert isinstance(events[-1], GenerationUpdate) and isinstance(events[-1].event, Finished)


# ---- the app ----------------------------------------------------------------------------------------------------


async def test_the_session_refuses_a_turn_that_cannot_fit_before_saving_or_sending():
    from session_helpers import FakeBackend, FakeView
    from tui.session import ChatSession
    from tui.store import ConversationStore

    store, view, backend = ConversationStore(":memory:"), FakeView(), FakeBackend()
    session = ChatSession(store, backend, view, lambda family: Settings())
    session.set_model(ModelInfo(name="tiny", family="llada2_moe", label="LLaDA-2", supports_images=False,
                                setting_defaults={"max_tokens": 256}, context_length=100,
                                count_tokens=lambda messages, think: sum(len(m["content"].split()) for m in messages)))
    assert not await session.send("word " * 120)
    assert backend.requests == [] and store.list() == []
    message, severity = view.named("notify")[-1]
    assert severity == "error" and "120 tokens" in message and "context is 100 tokens" in message
    assert await session.send("word " * 90)   # fits once the default max_tokens is clamped
    store.close()


async def test_the_prompt_shows_a_live_token_count_and_refuses_an_overlong_turn(app_env, tmp_path):
    from tui.widgets.messages import AssistantMessage

    app = make_app(str(small_context_copy(tmp_path, "llada2", 400)))
    async with app.run_test() as pilot:
        await wait_for_model(pilot)
        count = app.chat.query_one("#token-count")
        await wait_for(pilot, lambda: str(count.render()) == "0 / 400 tokens", "the empty prompt's count")
        text = "word " * 10
        expected = app.model_info.count_tokens([{"role": "user", "content": text}], False)
        app.chat.prompt.value = text
        await wait_for(pilot, lambda: str(count.render()) == f"{expected} / 400 tokens", "the typed prompt's count")
        assert not count.has_class("-over")
        app.chat.prompt.value = "word " * 120
        await wait_for(pilot, lambda: count.has_class("-over"), "the over-limit mark")
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("Not sent" in n for n in notices(app)), "the refusal")
        assert app.chat.prompt.value == "word " * 120         # nothing typed is lost
        assert not app.chat.query(AssistantMessage)           # and nothing was sent
