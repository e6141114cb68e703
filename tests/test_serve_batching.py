"""Batched serving (`serve --max-batch N`): concurrent requests' canvases denoised in one forward pass, each
request's answer still its solo answer. Driven by the official `openai` client on loopback."""

from __future__ import annotations

import threading
import time

import openai
import pytest

import engine
from engine.serve import batch_scheduler
from engine.serve.batch_worker import BatchingWorker, worker_factory
from engine.settings import Settings
from engine.thread.worker import EngineWorker
from tui.demo_models import DEMO_ROOT

from serve_helpers import serving

PROMPTS = ["Many thanks!", "Could you tell me what you are?", "Morning!", "Hello there"]
LENGTHS = [64, 96, 80, 120]    # different canvases and blocks: the requests are never in step


def batching(notify) -> BatchingWorker:
    return BatchingWorker(notify, max_batch=4)


@pytest.fixture
def batch_sizes(monkeypatch) -> list[int]:
    """The size of every batched forward the scheduler runs."""
    sizes: list[int] = []
    real = batch_scheduler.forward_all

    def counting(network, calls):
        sizes.append(len(calls))
        return real(network, calls)

    monkeypatch.setattr(batch_scheduler, "forward_all", counting)
    return sizes


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def concurrently(server, model: str, bodies: list[dict]) -> list[tuple[str, str]]:
    """Stream every body at once (one thread each); each stream's (content, finish reason)."""
    answers: list = [None] * len(bodies)
    start = threading.Barrier(len(bodies))

    def ask(index: int) -> None:
        start.wait()
        text, finish = "", None
        for chunk in client(server).chat.completions.create(model=model, stream=True, **bodies[index]):
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
                finish = chunk.choices[0].finish_reason or finish
        answers[index] = (text, finish)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return answers


@pytest.mark.parametrize("demo", ["diffusion-gemma-demo", "llada2-demo"])
def test_four_concurrent_streams_each_equal_their_solo_run(demo, batch_sizes):
    folder = DEMO_ROOT / demo
    bodies = [{"messages": [{"role": "user", "content": prompt}], "temperature": 0, "seed": 7 + i,
               "max_tokens": length} for i, (prompt, length) in enumerate(zip(PROMPTS, LENGTHS))]
    with serving(str(folder), make_worker=batching) as server:   # an absolute path: not a fixture name
        name = server.bridge.info.name
        answers = concurrently(server, name, bodies)
    model = engine.load(str(folder))
    for body, answer in zip(bodies, answers):
        solo = list(engine.generate(model, messages=body["messages"],
                                    settings=Settings(temp=0.0, seed=body["seed"], max_tokens=body["max_tokens"])))[-1]
        assert answer == (solo.content, solo.finish_reason), body["messages"][0]["content"]
    assert max(batch_sizes) == 4, "the four requests were never denoised together"


def test_frames_reach_each_of_two_concurrent_streams(batch_sizes):
    with serving("dg_text", make_worker=batching) as server:
        seen = [0, 0]

        def ask(index: int) -> None:
            for chunk in client(server).chat.completions.create(
                    model="dg_text", stream=True, messages=[{"role": "user", "content": f"hi {index}"}],
                    max_tokens=64, extra_body={"max_denoising_steps": 24, "diffusion_frames": True}):
                seen[index] += "diffusion_frame" in (chunk.model_extra or {})

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert all(count > 0 for count in seen) and max(batch_sizes) == 2


def test_a_bad_request_in_a_batch_fails_alone():
    with serving("dg_text", make_worker=batching) as server:
        # A fixed seed: without one each request draws its own, and on this random-weight checkpoint some
        # draws end at an EOS before 40 tokens ("stop"), which failed a full-suite run.
        bodies = [{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 40, "seed": 0},
                  {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 40,
                   "extra_body": {"t_min": 0.9, "t_max": 0.5}}]
        good = client(server).chat.completions.create(model="dg_text", **bodies[0])
        with pytest.raises(openai.BadRequestError):
            client(server).chat.completions.create(model="dg_text", **bodies[1])
        assert good.choices[0].finish_reason == "length"


def test_max_batch_one_serves_one_request_at_a_time():
    assert worker_factory(1) is EngineWorker
    assert isinstance(worker_factory(3)(lambda event: None), BatchingWorker)


def test_a_client_leaving_cancels_only_its_own_request(batch_sizes):
    """One of two batched streams is closed after its first chunk: the other still gets its solo answer."""
    body = {"messages": [{"role": "user", "content": "Morning!"}], "temperature": 0, "seed": 2, "max_tokens": 96}
    folder = DEMO_ROOT / "diffusion-gemma-demo"
    with serving(str(folder), make_worker=batching) as server:
        name = server.bridge.info.name
        leaving = client(server).chat.completions.create(
            model=name, stream=True, messages=[{"role": "user", "content": "Many thanks!"}], max_tokens=256,
            extra_body={"max_denoising_steps": 100000, "stability_threshold": 0, "confidence_threshold": 1e-9})
        next(iter(leaving))                     # its request is running (for hours, unless cancelled)
        staying = concurrently(server, name, [body])[0]
        leaving.close()
        deadline = time.monotonic() + 30
        while server.bridge.queued and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.bridge.queued == 0, "the closed stream's request kept running"
    solo = list(engine.generate(engine.load(str(folder)), messages=body["messages"],
                                settings=Settings(temp=0.0, seed=2, max_tokens=96)))[-1]
    assert staying == (solo.content, solo.finish_reason)
    assert max(batch_sizes) == 2
