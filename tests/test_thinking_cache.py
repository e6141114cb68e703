"""Switching thinking mid-conversation (issue 24, item 13): the engine encodes only what follows the longest
common token prefix, and keeps one cache per thinking setting, so switching back does not encode the whole
conversation again. The tiny DiffusionGemma checkpoint's template writes the switch (`<|think|>` in a system
turn) right after <bos>, as Gemma 4's does: after a switch almost nothing of the other setting's cache matches."""

from __future__ import annotations

import pytest

import engine
from engine.events import Finished, GenerationRequest, GenerationUpdate, ModelLoaded, Started
from engine.thread.worker import EngineWorker

from conftest import CHECKPOINTS
from test_worker import Recorder

SETTINGS = engine.Settings(max_tokens=16, max_denoising_steps=3, temp=0.0)


def common_prefix(a, b) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@pytest.fixture(scope="module")
def worker():
    recorder = Recorder()
    worker = EngineWorker(recorder).start()
    worker.load_model(str(CHECKPOINTS / "dg_text"))
    assert recorder.wait(ModelLoaded).info.thinking
    yield worker, recorder
    worker.close()


def turn(worker, recorder, messages, think):
    worker.generate(GenerationRequest(tuple(messages), SETTINGS, think=think, conversation="c"))
    updates = []
    while not updates or not isinstance(updates[-1].event, Finished):
        updates.append(recorder.wait(GenerationUpdate))
    started = next(u.event for u in updates if isinstance(u.event, Started))
    return started, updates[-1].event


def test_switching_thinking_encodes_only_after_the_common_prefix_and_switching_back_reuses_its_cache(worker):
    worker, recorder = worker
    model = engine.load(CHECKPOINTS / "dg_text")
    tokenizer = model.tokenizer
    messages = [{"role": "user", "content": "Why is the sky blue?"}]
    first_started, first = turn(worker, recorder, messages, think=False)
    assert first_started.encoded_tokens == first_started.prompt_tokens
    # What the off cache holds: the prompt and the answer (DiffusionGemma caches exactly what it emitted).
    off_cached = tokenizer.encode_chat(messages, think=False) + list(first.token_ids)

    messages += [{"role": "assistant", "content": first.content}, {"role": "user", "content": "And the sunset?"}]
    second_ids = tokenizer.encode_chat(messages, think=True)
    second_started, second = turn(worker, recorder, messages, think=True)
    kept = common_prefix(off_cached, second_ids)
    assert 0 < kept < 8   # the template's switch sits right after <bos>: this is all a switch can reuse
    assert (second_started.prompt_tokens, second_started.encoded_tokens) == (len(second_ids), len(second_ids) - kept)
    fresh = list(engine.generate(model, prompt_ids=second_ids, settings=SETTINGS))[-1]
    assert second.token_ids == fresh.token_ids

    # Back to off: served from the off cache (up to where the template renders the first answer differently from
    # how it was generated), not from the on cache, which shares only the first tokens.
    messages += [{"role": "assistant", "content": second.content}, {"role": "user", "content": "Thanks."}]
    third_ids = tokenizer.encode_chat(messages, think=False)
    third_started, third = turn(worker, recorder, messages, think=False)
    from_off = common_prefix(off_cached, third_ids)
    assert from_off > kept + 10
    assert third_started.encoded_tokens == len(third_ids) - from_off
    fresh = list(engine.generate(model, prompt_ids=third_ids, settings=SETTINGS))[-1]
    assert third.token_ids == fresh.token_ids

    # Forgetting the conversation drops both caches.
    worker.forget("c")
    again, _ = turn(worker, recorder, messages, think=True)
    assert again.encoded_tokens == again.prompt_tokens


def test_a_template_without_a_switch_shares_one_cache_across_the_setting():
    # LLaDA-2's template ignores `enable_thinking` ("detailed thinking off" is fixed): the prompt does not
    # change, so the conversation keeps one cache and thinking on reuses all of it (whole blocks).
    recorder = Recorder()
    worker = EngineWorker(recorder).start()
    try:
        worker.load_model(str(CHECKPOINTS / "llada2"))
        assert not recorder.wait(ModelLoaded).info.thinking
        messages = [{"role": "user", "content": "Why is the sky blue? " * 4}]
        first_started, first = turn(worker, recorder, messages, think=False)
        messages += [{"role": "assistant", "content": first.content}, {"role": "user", "content": "And?"}]
        second_started, _ = turn(worker, recorder, messages, think=True)
        block = second_started.block_length
        kept = second_started.prompt_tokens - second_started.encoded_tokens
        assert kept >= first_started.prompt_tokens - first_started.prompt_tokens % block > 0
    finally:
        worker.close()


def test_a_copied_cache_is_independent_of_the_original():
    import mlx.core as mx
    from engine.models.llada2_moe import BlockCache

    cache = BlockCache(2, block_length=4)
    for layer in cache:
        layer.update(mx.zeros((1, 1, 8, 2)), mx.ones((1, 1, 8, 2)))
    fork = cache.copy()
    assert type(fork) is BlockCache and fork.block_length == 4 and fork.offset == 8
    fork.trim(3)
    fork[0].update(mx.full((1, 1, 2, 2), 5.0), mx.full((1, 1, 2, 2), 5.0))
    assert cache.offset == 8 and (fork[0].offset, fork[1].offset) == (5, 3)
    assert mx.array_equal(cache[0].keys, mx.zeros((1, 1, 8, 2))).item()
