"""The app's remote backend (tui/remote): the chunk formats and error shapes of SGLang, vLLM, mlx-vlm and
mlxcel from recorded streams, and the whole backend against `diffusion-chat serve` and a replay server."""

from __future__ import annotations

import json
import queue
import time

import pytest

import engine
from engine.events import (
    BlockCommitted,
    Finished,
    GenerationFailed,
    GenerationRequest,
    GenerationUpdate,
    LoadFailed,
    ModelLoaded,
    Started,
)
from engine.settings import Settings
from tui.remote import RemoteBackend, api_base
from tui.remote.chunks import ChunkReader, StreamError
from tui.remote.errors import error_text, http_error_line

from serve_helpers import CHECKPOINTS, RECORDINGS, replaying, serving

HI = ({"role": "user", "content": "Why is the sky blue?"},)
TIMEOUT_S = 20


def recorded(name: str) -> list:
    """The JSON payloads of a recording, as a client reads them (comments and [DONE] left out)."""
    events = [e for e in (RECORDINGS / f"{name}.sse").read_text().split("\n\n") if e.startswith("data: {")]
    return [json.loads(e[len("data: "):]) for e in events]


def read(name: str) -> tuple[list, ChunkReader]:
    reader = ChunkReader()
    return [event for payload in recorded(name) for event in reader.feed(payload)], reader


@pytest.mark.parametrize("name, content, reasoning, finish", [
    ("sglang_llada2", "The sky looks blue because air molecules scatter short (blue) wavelengths of sunlight far "
                      "more than long ones.", "", "stop"),
    ("vllm_dg", "Rayleigh scattering: shorter wavelengths scatter more, so the sky is blue.",
     "The user asks about colour; Rayleigh scattering.", "length"),
    ("mlx_vlm_dg", "Blue light scatters the most.", "Think about light.", "stop"),
])
def test_each_servers_stream_reads_as_committed_blocks(name, content, reasoning, finish):
    events, reader = read(name)
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    assert "".join(b.content_delta for b in blocks) == content
    assert "".join(b.reasoning_delta for b in blocks) == reasoning  # mlx-vlm's two spellings are not doubled
    assert [b.block for b in blocks] == list(range(len(blocks)))
    finished = reader.finished()
    assert (finished.finish_reason, finished.content, finished.reasoning) == (finish, content, reasoning)
    assert finished.stats.generated_tokens == int(recorded(name)[-1]["usage"]["completion_tokens"])


@pytest.mark.parametrize("name, message", [
    ("sglang_error", "Internal server error: CUDA out of memory"),
    ("mlx_vlm_error", "Generation failed: [metal::malloc] Attempting to allocate 9663676416 bytes"),
    ("mlxcel_dg", "the server reported an error (it sent no details)"),
])
def test_mid_stream_errors_of_each_server_are_one_line(name, message):
    with pytest.raises(StreamError) as raised:
        read(name)
    assert str(raised.value) == message


@pytest.mark.parametrize("server, line", [
    ("sglang", "HTTP 400: DiffusionGemma with Gemma4Renoise does not support request-level sampling_seed; sampling "
               "is governed by the renoise schedule."),
    ("mlx_vlm", "HTTP 400: Structured outputs are not supported for diffusion models"),
    ("mlxcel", "HTTP 503: Server is busy: the diffusion queue is full"),
    ("vllm", "HTTP 404: The model `gemma` does not exist."),
])
def test_refusals_before_a_stream_are_one_line_in_every_shape(server, line):
    refusal = json.loads((RECORDINGS / "refusals.json").read_text())[server]
    assert http_error_line(refusal["status"], json.dumps(refusal["body"]).encode()) == line


def test_error_shapes_and_non_errors():
    assert error_text({"detail": [{"loc": ["body", "messages"], "msg": "field required"}]}) == "messages: field required"
    assert http_error_line(502, b"<html>Bad Gateway</html>") == "HTTP 502: <html>Bad Gateway</html>"
    assert error_text({"choices": []}) is None and error_text("text") is None


def test_api_base_accepts_the_usual_spellings():
    assert {api_base(u) for u in ("http://h:8000", "http://h:8000/", "http://h:8000/v1", "h:8000/v1/")} == \
        {"http://h:8000/v1"}


# ---- the whole backend, over loopback ----------------------------------------------------------------------


class Events:
    def __init__(self):
        self.queue: queue.Queue = queue.Queue()

    def __call__(self, event):
        self.queue.put(event)

    def until_end(self, backend=None, frames=None) -> list:
        """Every event up to a generation's end; meanwhile the backend's frame slot is sampled into `frames`."""
        seen = []
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                event = self.queue.get(timeout=0.002)
            except queue.Empty:
                if frames is not None and backend.latest_frame is not None:
                    frames.append(backend.latest_frame)
                continue
            seen.append(event)
            if isinstance(event, (GenerationFailed, LoadFailed, ModelLoaded)) or \
                    isinstance(getattr(event, "event", None), Finished):
                return seen
        raise AssertionError(f"no end after {seen}")


@pytest.fixture
def connected():
    """`connect(url, model=None)` -> (backend, events) with the model loaded; closed afterwards."""
    made = []

    def connect(url: str, model: str | None = None, api_key: str | None = None):
        events = Events()
        backend = RemoteBackend(events, url, api_key).start()
        made.append(backend)
        backend.load_model(model)
        loaded = events.until_end()[-1]
        assert isinstance(loaded, ModelLoaded), loaded
        return backend, events

    yield connect
    for backend in made:
        backend.close()


def test_against_diffusion_chat_serve_frames_come_then_the_local_text(connected):
    settings = Settings(max_tokens=40, max_denoising_steps=24, seed=2)
    with serving("dg_text") as server:
        backend, events = connected(server.url)
        assert backend.model.frames and backend.model.remote and backend.model.family == "diffusion_gemma"
        job = backend.generate(GenerationRequest(HI, settings))
        frames = []
        seen = events.until_end(backend, frames)
    local = list(engine.generate(engine.load(CHECKPOINTS / "dg_text"), messages=list(HI), settings=settings))
    updates = [e.event for e in seen if isinstance(e, GenerationUpdate) and e.job == job]
    assert isinstance(updates[0], Started) and updates[0].prompt_tokens == local[0].prompt_tokens
    committed = [u for u in updates if isinstance(u, BlockCommitted)]
    assert [b.content_delta for b in committed] == [e.content_delta for e in local if isinstance(e, BlockCommitted)]
    assert [b.token_ids for b in committed] == [e.token_ids for e in local if isinstance(e, BlockCommitted)]
    assert updates[-1].content == local[-1].content and updates[-1].stats.steps_per_block == \
        local[-1].stats.steps_per_block
    assert frames and all(f.job == job for f in frames)
    step = frames[0].step
    assert all(backend.model.token_text(int(t)) for t in step.canvas)  # every id's text arrived with its frame


def test_against_other_servers_committed_blocks_only(connected):
    with replaying(owner="sglang") as (url, app):
        backend, events = connected(url, "sglang_llada2")
        assert not backend.model.frames and backend.model.family == "llada2_moe"
        assert backend.model.offered_settings == ("max_tokens",)
        backend.generate(GenerationRequest(HI, Settings(max_tokens=64, seed=3, temp=0.5), think=True))
        seen = events.until_end()
    sent = app.state.seen[-1]
    assert sent["max_tokens"] == 64 and "seed" not in sent and "temperature" not in sent  # only what it takes
    assert sent["chat_template_kwargs"] == {"enable_thinking": True} and "diffusion_frames" not in sent
    blocks = [e.event for e in seen if isinstance(e.event, BlockCommitted)]
    assert len(blocks) == 2 and seen[-1].event.finish_reason == "stop"
    assert backend.latest_frame is None


@pytest.mark.parametrize("model, message", [
    ("sglang_error", "Internal server error: CUDA out of memory"),
    ("refuse_sglang", "HTTP 400: DiffusionGemma with Gemma4Renoise does not support request-level sampling_seed; "
                      "sampling is governed by the renoise schedule."),
    ("refuse_mlx_vlm", "HTTP 400: Structured outputs are not supported for diffusion models"),
])
def test_server_errors_become_one_failure_line(connected, model, message):
    with replaying() as (url, _):
        backend, events = connected(url, model)
        backend.generate(GenerationRequest(HI, Settings()))
        failed = events.until_end()[-1]
    assert isinstance(failed, GenerationFailed) and failed.message == message


def test_a_server_that_goes_away_mid_answer_fails_after_the_committed_block(connected):
    with replaying() as (url, _):
        backend, events = connected(url, "dropped")
        backend.generate(GenerationRequest(HI, Settings()))
        seen = events.until_end()
    assert seen[0].event.content_delta == "Saved before the server died. "
    assert isinstance(seen[-1], GenerationFailed) and seen[-1].message.startswith("the connection to ")


def test_cancel_closes_the_stream_at_once_and_keeps_what_was_committed(connected):
    with replaying() as (url, _):
        backend, events = connected(url, "slow")
        job = backend.generate(GenerationRequest(HI, Settings()))
        first = events.queue.get(timeout=TIMEOUT_S)
        asked = time.monotonic()
        backend.cancel(job)
        finished = events.until_end()[-1].event
        assert time.monotonic() - asked < 1.0  # the recording waits 30 s: the stream was closed, not read out
    assert first.event.content_delta == "A first block, then a long wait. "
    assert finished.finish_reason == "cancelled" and finished.content == first.event.content_delta


def test_connecting_fails_in_one_line(connected):
    events = Events()
    with replaying() as (url, _):
        backend = RemoteBackend(events, url).start()
        backend.load_model("no-such-model")
        missing = events.until_end()[-1]
        backend.close()
    backend = RemoteBackend(events, url).start()   # the replay server is gone now
    backend.load_model(None)
    refused = events.until_end()[-1]
    backend.close()
    with serving("dg_text", api_key="k") as server:
        backend = RemoteBackend(events, server.url, "wrong").start()
        backend.load_model(None)
        unauthorized = events.until_end()[-1]
        backend.close()
    assert isinstance(missing, LoadFailed) and "has no model 'no-such-model'; it serves: dropped" in missing.message
    assert isinstance(refused, LoadFailed) and refused.message.startswith(f"cannot use {url}/v1: ")
    assert unauthorized.message.endswith("HTTP 401: invalid or missing API key (send Authorization: Bearer KEY)")


def test_the_tail_diffusion_chat_serve_sends_after_its_blocks_is_the_finished_tail_not_a_block():
    reader = ChunkReader()
    block = {"block": 0, "token_ids": [1, 2], "steps": 3, "stop_reason": "max_denoising_steps"}
    chunk = {"choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": None}], "diffusion_block": block}
    tail = {"choices": [{"index": 0, "delta": {"content": " ✓"}, "finish_reason": None}]}
    done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    events = [e for payload in (chunk, tail, done) for e in reader.feed(payload)]
    finished = reader.finished()
    assert [e.block for e in events] == [0]
    assert (finished.content, finished.content_tail) == ("Hello ✓", " ✓")
