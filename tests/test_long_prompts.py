"""Long prompts are encoded in passes (engine/models/chunking.py): the result equals one pass over the whole
prompt (sliding window shorter than the prompt, an image run, both families), no mask is [T, T], a chunk never
splits an image run, the peak memory stays O(prompt x chunk), and a cancelled prefill stops between passes."""

from __future__ import annotations

import threading

import mlx.core as mx
import numpy as np
import pytest
from PIL import Image

from conftest import CHECKPOINTS
from engine.images.processor import image_runs
from engine.settings import Settings
from tui_helpers import app_env, make_app, wait_for, wait_for_answer, wait_for_model  # noqa: F401  (app_env: fixture)
from engine.models import chunking
from engine.models.chunking import Cancelled, chunk_tokens
from engine.models.diffusion_gemma import make_processor, masks
from engine.models.diffusion_gemma.masks import chunk_end, media_run_ids

FP32_ATOL = 2e-5


def _prompt(length: int, seed: int = 0, vocab: int = 480) -> mx.array:
    return mx.array(np.random.default_rng(seed).integers(3, vocab, (1, length)), dtype=mx.int32)


@pytest.fixture
def one_pass(monkeypatch):
    """Every prompt in a single encoder pass (the unchunked encoder)."""
    def apply():
        monkeypatch.setattr(chunking, "MIN_CHUNK", 10**7)
        monkeypatch.setattr(chunking, "MAX_CHUNK", 10**7)
    return apply


@pytest.fixture
def small_passes(monkeypatch):
    def apply(tokens: int):
        monkeypatch.setattr(chunking, "MIN_CHUNK", tokens)
        monkeypatch.setattr(chunking, "MAX_CHUNK", tokens)
    return apply


def _assert_same_cache(a, b):
    assert a.offset == b.offset
    for layer_a, layer_b in zip(a, b):
        np.testing.assert_allclose(np.array(layer_a.keys), np.array(layer_b.keys), atol=FP32_ATOL, rtol=0)
        np.testing.assert_allclose(np.array(layer_a.values), np.array(layer_b.values), atol=FP32_ATOL, rtol=0)


def test_chunk_size_shrinks_with_the_keys_and_stays_in_bounds():
    assert chunk_tokens(4, 1_000) == chunking.MAX_CHUNK
    assert chunk_tokens(16, 262_144) == chunking.MIN_CHUNK
    assert chunk_tokens(4, 32_768) * 4 * 32_768 <= chunking.SCORE_ELEMENTS
    assert chunk_tokens(16, 32_768, multiple=32) % 32 == 0


def test_a_chunk_grows_to_cover_an_image_run_instead_of_splitting_it():
    types = np.zeros(40, dtype=np.int32)
    types[10:25] = 1      # one image
    types[26:30] = 1      # another, right after a text token
    runs = media_run_ids(types)
    assert chunk_end(0, 40, 8, runs) == 8          # ends on text: unchanged
    assert chunk_end(8, 40, 8, runs) == 25         # would end at 16, inside the first image
    assert chunk_end(25, 40, 2, runs) == 30        # would end at 27, inside the second
    assert chunk_end(30, 40, 8, runs) == 38 and chunk_end(38, 40, 8, runs) == 40
    assert chunk_end(8, 25, 8, runs) == 25         # a run at the very end of the prompt


def test_dg_chunked_encoder_equals_one_pass_with_a_window_shorter_than_the_prompt(load_network, one_pass,
                                                                                    small_passes):
    _, network = load_network("dg_text")
    window = network.config.text_config.sliding_window
    ids = _prompt(7 * window + 5)
    one_pass()
    whole = network.prefill(ids)
    whole_logits = network.denoise(_prompt(16, seed=1), whole)
    small_passes(window + 5)      # passes neither aligned with the window nor dividing the prompt
    chunked = network.prefill(ids)
    _assert_same_cache(whole, chunked)
    np.testing.assert_allclose(np.array(network.denoise(_prompt(16, seed=1), chunked)), np.array(whole_logits),
                               atol=1e-4, rtol=0)


def test_dg_chunked_encoder_never_builds_a_prompt_by_prompt_mask(load_network, small_passes, monkeypatch):
    _, network = load_network("dg_text")
    shapes = []
    real = masks.encoder_mask

    def recording(offset, length, key_start, window=None, media_runs=None):
        mask = real(offset, length, key_start, window, media_runs)
        shapes.append((length, offset + length - key_start, None if isinstance(mask, str) else mask.shape))
        return mask

    monkeypatch.setattr("engine.models.diffusion_gemma.network.encoder_mask", recording)
    small_passes(64)
    network.prefill(_prompt(600))
    assert max(queries for queries, _, _ in shapes) == 64
    window = network.config.text_config.sliding_window
    sliding = [shape for _, _, shape in shapes if shape is not None]
    assert sliding and all(shape[1] <= 64 + window - 1 for shape in sliding)   # sliding layers read their window


def _image_prompt(network, tmp_path, text_before: int, text_after: int):
    processor = make_processor(CHECKPOINTS / "dg_vision", network.config, None)
    path = tmp_path / "picture.png"
    rng = np.random.default_rng(3)
    Image.fromarray(rng.integers(0, 255, (384, 384, 3), dtype=np.uint8)).save(path)
    before = [int(t) for t in np.asarray(_prompt(text_before, seed=5))[0]]
    after = [int(t) for t in np.asarray(_prompt(text_after, seed=6))[0]]
    prompt = processor.prepare_prompt([2, *before, processor.image_token_id, *after], "", [path])
    return prompt


def test_dg_chunked_encoder_equals_one_pass_with_an_image(load_network, one_pass, small_passes, tmp_path):
    _, network = load_network("dg_vision")
    prompt = _image_prompt(network, tmp_path, text_before=41, text_after=50)
    (start, end), = image_runs(prompt.token_type_ids)
    assert end - start > 40 and start % 24 != 0   # a pass boundary would fall inside the run
    ids, types = mx.array([prompt.ids]), mx.array([prompt.token_type_ids])
    one_pass()
    whole = network.prefill(ids, None, prompt.pixel_values, types)
    whole_logits = network.denoise(_prompt(16, seed=1), whole)
    small_passes(24)
    chunked = network.prefill(ids, None, prompt.pixel_values, types)
    _assert_same_cache(whole, chunked)
    np.testing.assert_allclose(np.array(network.denoise(_prompt(16, seed=1), chunked)), np.array(whole_logits),
                               atol=1e-4, rtol=0)


def test_llada2_chunked_prefill_equals_one_pass(load_network, one_pass, small_passes):
    _, network = load_network("llada2")
    ids = _prompt(32 * 9 + 7)
    one_pass()
    whole = network.prefill(ids)
    whole_logits = network.denoise(_prompt(32, seed=2), whole)
    small_passes(64)
    chunked = network.prefill(ids)
    _assert_same_cache(whole, chunked)
    np.testing.assert_allclose(np.array(network.denoise(_prompt(32, seed=2), chunked)), np.array(whole_logits),
                               atol=1e-4, rtol=0)


@pytest.mark.parametrize("name", ["dg_text", "llada2"])
def test_a_4k_token_prompt_costs_memory_of_prompt_times_chunk(load_network, name):
    """One pass over 4,096 tokens needs ~300-370 MiB here (scores [heads, T, T] plus [T, T] masks); passes of at
    most 1,024 queries stay under 160 MiB."""
    _, network = load_network(name)
    ids = _prompt(4096)
    mx.eval(ids)
    mx.reset_peak_memory()
    network.prefill(ids)
    assert mx.get_peak_memory() < 160 * 2**20


@pytest.mark.parametrize("name", ["dg_text", "llada2"])
def test_a_cancelled_prefill_stops_between_passes(load_network, small_passes, name):
    _, network = load_network(name)
    small_passes(64)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        network.prefill(_prompt(640), cancel=cancel)


@pytest.mark.parametrize("name", ["dg_text", "llada2"])
def test_generate_cancelled_while_reading_the_prompt_finishes_cancelled_and_forgets_the_cache(name, small_passes):
    import engine
    from engine.events import BlockCommitted, Finished, Started

    model = engine.load(CHECKPOINTS / name)
    small_passes(64)
    session = engine.Session()
    cancel = threading.Event()
    cancel.set()
    events = list(engine.generate(model, prompt_ids=[int(t) for t in np.asarray(_prompt(700))[0]],
                                  settings=engine.Settings(max_tokens=8), cancel=cancel, session=session))
    assert isinstance(events[0], Started) and events[0].encoded_tokens == 0
    assert isinstance(events[-1], Finished) and events[-1].finish_reason == "cancelled"
    assert not any(isinstance(e, BlockCommitted) for e in events)
    assert session.cache is None and session.ids == []


@pytest.mark.parametrize("name, total", [("dg_text", 700), ("llada2", 672)])   # LLaDA-2 encodes whole blocks
def test_a_long_prompt_reports_each_encoder_pass_before_started(name, total, small_passes):
    import engine
    from engine.events import Prefilling, Started

    model = engine.load(CHECKPOINTS / name)
    small_passes(64)
    seen = []
    events = engine.generate(model, prompt_ids=[int(t) for t in np.asarray(_prompt(700))[0]],
                             settings=engine.Settings(max_tokens=4, max_denoising_steps=2), progress=seen.append)
    first = next(events)
    assert isinstance(first, Started)
    assert all(isinstance(p, Prefilling) and p.total_tokens == total for p in seen)
    assert [p.encoded_tokens for p in seen] == list(range(64, total, 64))
    list(events)


async def test_the_chat_shows_how_far_a_long_prompt_was_read():
    from engine.events import GenerationUpdate, Prefilling
    from session_helpers import MODEL, FakeBackend, FakeView
    from tui.session import ChatSession
    from tui.store import ConversationStore

    store, view = ConversationStore(":memory:"), FakeView()
    session = ChatSession(store, FakeBackend(), view, lambda family: Settings())
    session.set_model(MODEL)
    assert await session.send("a long document")
    await session.handle(GenerationUpdate(session.generation.job, Prefilling(12_288, 145_000)))
    assert view.named("show_activity")[-1][0].startswith("reading the prompt… 12,288 / 145,000 tokens · ")
    store.close()


def test_the_engine_thread_forwards_the_progress_of_a_long_prompt(small_passes):
    from engine.events import Finished, GenerationRequest, GenerationUpdate, ModelLoaded, Prefilling
    from engine.thread.worker import EngineWorker

    small_passes(64)
    events, done = [], threading.Event()

    def notify(event):
        events.append(event)
        if isinstance(event, ModelLoaded) or (isinstance(event, GenerationUpdate) and isinstance(event.event, Finished)):
            done.set()

    worker = EngineWorker(notify).start()
    try:
        worker.load_model(str(CHECKPOINTS / "dg_text"))
        assert done.wait(30)
        done.clear()
        worker.generate(GenerationRequest(({"role": "user", "content": "word " * 60},),
                                          Settings(max_tokens=4, max_denoising_steps=2)))
        assert done.wait(60)
    finally:
        worker.close()
    read = [e.event for e in events if isinstance(e, GenerationUpdate) and isinstance(e.event, Prefilling)]
    assert read and [p.encoded_tokens for p in read] == sorted(p.encoded_tokens for p in read)


async def test_pasting_a_long_document_into_the_app_counts_it_reads_it_and_esc_stops_it(app_env):
    """The reported case: a 200k-character document (146,689 tokens here) once crashed the engine. Now the prompt
    shows its count, the status says how far it was read, and esc stops the read between two passes."""
    from tui.widgets.messages import AssistantMessage

    document = ("The quick brown fox jumps over the lazy dog. " * 4500)[:200_000]
    app = make_app("dg_text")
    async with app.run_test() as pilot:
        await wait_for_model(pilot)
        count = app.chat.query_one("#token-count")
        app.chat.prompt.value = document
        await wait_for(pilot, lambda: str(count.render()).startswith("146,")
                       and str(count.render()).endswith("/ 262,144 tokens"), "the document's count")
        await pilot.press("enter")
        status = app.chat.status_bar
        await wait_for(pilot, lambda: "reading the prompt… " in status.text and " / 146," in status.text,
                       "the reading progress")
        await pilot.press("escape")
        await wait_for_answer(pilot)
        assert app.chat.query(AssistantMessage).last().status == "cancelled"
