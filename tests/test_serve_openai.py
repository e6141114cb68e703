"""`diffusion-chat serve` driven by the official `openai` client on loopback: the same text as a local run,
streaming in committed blocks, reasoning, images, frames, queueing, and a disconnect that cancels."""

from __future__ import annotations

import json
import threading
import time

import httpx
import openai
import pytest

import engine
from engine.events import BlockCommitted
from engine.settings import Settings

from serve_helpers import CHECKPOINTS, IMAGE, QUICK, Script, data_url, serving

HI = [{"role": "user", "content": "Why is the sky blue?"}]


@pytest.fixture(scope="module")
def dg_server():
    with serving("dg_text") as server:
        yield server


@pytest.fixture(scope="module")
def local_model():
    return engine.load(CHECKPOINTS / "dg_text")


def client(server, **options) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=options.pop("api_key", "unused"), max_retries=0,
                         **options)


def local_events(model, messages=HI, images=None, **settings) -> list:
    return list(engine.generate(model, messages=messages, settings=Settings(**settings), images=images))


def local_answer(model, messages=HI, images=None, **settings):
    return local_events(model, messages, images, **settings)[-1]


def test_a_non_stream_answer_equals_a_local_run(dg_server, local_model):
    reply = client(dg_server).chat.completions.create(model="dg_text", messages=HI, max_tokens=40,
                                                      extra_body={"max_denoising_steps": 4, "seed": 3})
    local = local_answer(local_model, max_tokens=40, max_denoising_steps=4, seed=3)
    assert reply.choices[0].message.content == local.content
    assert reply.choices[0].finish_reason == local.finish_reason == "length"
    assert reply.usage.completion_tokens == 40 and reply.usage.prompt_tokens == local.stats.prompt_tokens


def test_a_stream_sends_whole_blocks_then_finish_usage_and_done(dg_server, local_model):
    chunks = list(client(dg_server).chat.completions.create(
        model="dg_text", messages=HI, stream=True, stream_options={"include_usage": True}, temperature=0.5,
        max_tokens=70, seed=1, extra_body={"max_denoising_steps": 4}))
    events = local_events(local_model, max_tokens=70, max_denoising_steps=4, temp=0.5, seed=1)
    local = events[-1]
    texts = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(texts) == local.content
    # One chunk per committed block with text (the held-back tail, if any, comes last on its own).
    assert texts == [e.content_delta for e in events if isinstance(e, BlockCommitted) and e.content_delta] + \
        ([local.content_tail] if local.content_tail else [])
    assert len(texts) > 1
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == local.finish_reason
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == local.stats.generated_tokens
    with httpx.stream("POST", dg_server.url + "/v1/chat/completions",
                      json={"messages": HI, "stream": True, **QUICK}) as response:
        lines = [line for line in response.iter_lines() if line]
    assert response.headers["content-type"].startswith("text/event-stream")
    assert lines[-1] == "data: [DONE]" and "usage" not in lines[-2]  # no usage chunk unless asked


def test_frames_are_empty_chunks_a_plain_client_ignores(dg_server, local_model):
    chunks = list(client(dg_server).chat.completions.create(
        model="dg_text", messages=HI, stream=True, max_tokens=40,
        extra_body={"max_denoising_steps": 24, "diffusion_frames": True, "seed": 0}))
    frames = [c.model_extra["diffusion_frame"] for c in chunks if "diffusion_frame" in (c.model_extra or {})]
    assert frames and all(not c.choices[0].delta.content for c in chunks if "diffusion_frame" in c.model_extra)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == \
        local_answer(local_model, max_tokens=40, max_denoising_steps=24).content
    order = [("frame", f["block"]) for f in frames]
    for position, chunk in enumerate(chunks):
        if "diffusion_block" in (chunk.model_extra or {}):
            block = chunk.model_extra["diffusion_block"]["block"]
            before = [c.model_extra.get("diffusion_frame", {}).get("block") for c in chunks[:position]]
            after = [c.model_extra.get("diffusion_frame", {}).get("block") for c in chunks[position:]]
            assert block in before and block not in after  # a block's frames come before its text, never after
    assert order and max(f["step"] for f in frames) < 24
    assert set(frames[0]["texts"]) >= {str(i) for i in frames[0]["canvas"]}


def test_reasoning_streams_as_reasoning_content_and_thinking_reaches_the_engine():
    script = Script([("Let me think. ", ""), ("Done.", "The answer.")])
    with serving(None, make_worker=script.worker) as server:
        api = client(server)
        chunks = list(api.chat.completions.create(model="scripted", messages=HI, stream=True,
                                                  extra_body={"chat_template_kwargs": {"enable_thinking": True}}))
        whole = api.chat.completions.create(model="scripted", messages=HI, extra_body={"enable_thinking": True})
    reasoning = "".join((c.choices[0].delta.model_extra or {}).get("reasoning_content") or "" for c in chunks)
    assert reasoning == "Let me think. Done."
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "The answer."
    assert whole.choices[0].message.model_extra["reasoning_content"] == "Let me think. Done."
    assert [call["think"] for call in script.calls] == [True, True]


def test_an_image_as_a_data_url_gives_the_local_answer():
    image = IMAGE / "image.png"
    content = [{"type": "image_url", "image_url": {"url": data_url(image)}}, {"type": "text", "text": "What is it?"}]
    with serving("dg_vision") as server:
        reply = client(server).chat.completions.create(model="dg_vision", messages=[{"role": "user", "content": content}],
                                                       max_tokens=40, seed=0, extra_body={"max_denoising_steps": 4})
    model = engine.load(CHECKPOINTS / "dg_vision")
    question = [{"role": "user", "content": "What is it?"}]
    local = local_answer(model, question, images=[str(image)], max_tokens=40, max_denoising_steps=4)
    assert reply.choices[0].message.content == local.content
    text_only = local_answer(model, question, max_tokens=1, max_denoising_steps=1)
    assert reply.usage.prompt_tokens == local.stats.prompt_tokens > text_only.stats.prompt_tokens  # the image was read


def test_a_bad_request_raises_the_clients_bad_request_error(dg_server):
    with pytest.raises(openai.BadRequestError) as raised:
        client(dg_server).chat.completions.create(model="dg_text", messages=HI, extra_body={"t_min": 0.9, "t_max": 0.5})
    assert raised.value.body["message"] == "t_max (0.5) must be greater than t_min (0.9)"
    assert raised.value.body["param"] == "t_max"


def test_a_client_that_disconnects_cancels_its_generation_within_a_step():
    script = Script([("", "block one ")] * 50, steps=20, step_s=0.01)
    with serving(None, make_worker=script.worker) as server:
        stream = client(server).chat.completions.create(model="scripted", messages=HI, stream=True,
                                                        extra_body={"diffusion_frames": True})
        for chunk in stream:
            if "diffusion_frame" in (chunk.model_extra or {}):
                break
        stream.close()
        closed_at = time.monotonic()
        deadline = time.monotonic() + 5
        while server.bridge.queued and time.monotonic() < deadline:
            time.sleep(0.005)
        assert server.bridge.queued == 0
        assert script.cancelled_at is not None and script.cancelled_at - closed_at < 0.1  # one 10 ms step, and slack
        # The engine thread carries on with the next request.
        script.blocks, script.step_s = [("", "ok")], 0.0
        assert client(server).chat.completions.create(model="scripted", messages=HI).choices[0].finish_reason == "stop"


def test_requests_queue_one_at_a_time_and_a_full_queue_is_503():
    script = Script([("", "held")])
    script.hold = True
    with serving(None, make_worker=script.worker, max_queue=2) as server:
        results = {}

        def ask(name):
            results[name] = httpx.post(server.url + "/v1/chat/completions", json={"messages": HI}, timeout=20)

        first = threading.Thread(target=ask, args=("first",))
        first.start()
        while server.bridge.queued < 1:
            time.sleep(0.005)
        second = threading.Thread(target=ask, args=("second",))
        second.start()
        while server.bridge.queued < 2:
            time.sleep(0.005)
        busy = httpx.post(server.url + "/v1/chat/completions", json={"messages": HI})
        script.release.set()
        first.join(20), second.join(20)
    assert busy.status_code == 503 and busy.json()["error"]["code"] == "server_busy"
    assert busy.headers["retry-after"] == "2"  # clients (the openai one too) wait that long before retrying
    assert results["first"].headers["x-queue-position"] == "0" and results["second"].headers["x-queue-position"] == "1"
    assert json.loads(results["second"].content)["choices"][0]["message"]["content"] == "held"
