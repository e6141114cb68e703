"""The remote backend against a hostile server on loopback: frames with huge arrays, integers past any range,
1e400, negative counts, a block index of 10^18, nesting 100,000 deep, an endless line. Every turn ends with
one line, Esc ends a turn that stalls after a hostile frame, and the next prompt is answered."""

from __future__ import annotations

import asyncio
import json

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from engine.serve import wire
from engine.events import Finished, GenerationFailed, GenerationRequest, GenerationUpdate, ModelInfo
from engine.settings import Settings
from tui.app import AppOptions, DiffusionChatApp
from tui.remote import RemoteBackend
from tui.widgets.messages import AssistantMessage

from serve_helpers import on_loopback
from test_remote_backend import HI, Events
from tui_helpers import app_env, send, wait_for, wait_for_answer, wait_for_model  # noqa: F401  (app_env: fixture)

INFO = ModelInfo(name="hostile", family="diffusion_gemma", label="DiffusionGemma", supports_images=False,
                 setting_defaults={"temp": 1.0}, context_length=4096)


def frame(**changes) -> dict:
    good = {"v": 1, "block": 0, "step": 1, "max_steps": 4, "canvas": [5, 6], "candidates": [5, 7],
            "texts": {"5": "a", "6": "b", "7": "c"}, "accepted": [True, False], "newly_accepted": 1,
            "scores": [0.1, None], "score_kind": "entropy", "temperature": 1.0, "noise_is_mask": False,
            "prompt_positions": 0}
    return {**good, **changes}


def chunk(content: str = "", finish: str | None = None, **extensions) -> str:
    payload = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "hostile",
               "choices": [{"index": 0, "delta": {"content": content} if content else {}, "finish_reason": finish}],
               **extensions}
    return json.dumps(payload)


GOOD = [chunk(**{wire.FRAME_KEY: frame()}),
        chunk("Fine. ", **{wire.BLOCK_KEY: {"block": 0, "token_ids": [5, 6], "steps": 2, "stop_reason": "x"}}),
        chunk(finish="stop")]

# name -> the raw `data:` payloads the server streams (strings, so numbers JSON cannot hold stay as sent)
HOSTILE = {
    "huge_array": [chunk(**{wire.FRAME_KEY: frame(canvas=[1] * 300_000, candidates=[1] * 300_000)})],
    "wide_frame": [chunk(**{wire.FRAME_KEY: frame(canvas=[1] * 5000, candidates=[1] * 5000, accepted=[True] * 5000,
                                                  scores=[0.0] * 5000, texts={"1": "x"})})],
    "overflowing_int": [chunk(**{wire.FRAME_KEY: frame()}).replace('"canvas": [5, 6]', '"canvas": [5, ' + "9" * 40 + "]")],
    "huge_digits": [chunk(**{wire.FRAME_KEY: frame()}).replace('"step": 1', '"step": ' + "9" * 5000)],
    "infinite_score": [chunk(**{wire.FRAME_KEY: frame()}).replace("0.1", "1e400")],
    "infinite_stats": [chunk(finish="stop", **{wire.STATS_KEY: {
        "finish_reason": "stop", "steps_per_block": [1], "prompt_tokens": 1, "generated_tokens": 1,
        "work_tokens": 1, "prefill_s": 0, "denoise_s": 0, "total_s": 0}}).replace('"total_s": 0', '"total_s": 1e400')],
    "negative_count": [chunk(**{wire.FRAME_KEY: frame(newly_accepted=-5)})],
    "negative_steps": [chunk(finish="stop", **{wire.STATS_KEY: {
        "finish_reason": "stop", "steps_per_block": [-1] * 3, "prompt_tokens": 1, "generated_tokens": 1,
        "work_tokens": 1, "prefill_s": 0, "denoise_s": 0, "total_s": 0}})],
    "block_index": [chunk("x", **{wire.BLOCK_KEY: {"block": 10**18, "token_ids": [], "steps": 1, "stop_reason": "x"}}),
                    chunk(finish="stop")],
    "frame_block_index": [chunk(**{wire.FRAME_KEY: frame(block=10**18)})],
    "text_key_far_away": [chunk(**{wire.FRAME_KEY: frame(texts={"5": "a", "1000000000000000000": "b"})})],
    "deep_nesting": ["[" * 100_000 + "]" * 100_000],
    "endless_line": ["x" * (6 << 20)],
    "usage_overflow": [chunk("hi"), chunk(finish="stop").replace('"model": "hostile"',
                                                                  '"usage": {"prompt_tokens": 1e400}, "model": "x"')],
}


# The most a frame may hold: every position a different id near the top of the id range, each with a text.
_IDS = [wire.MAX_TOKEN_ID - 1 - 7 * i for i in range(wire.MAX_POSITIONS)]
WIDEST = chunk(**{wire.FRAME_KEY: frame(canvas=_IDS, candidates=_IDS, accepted=[False] * len(_IDS),
                                        scores=[0.5] * len(_IDS), newly_accepted=0,
                                        texts={str(i): "w" * wire.MAX_TOKEN_TEXT for i in _IDS})})


def hostile_app() -> Starlette:
    async def models(request: Request):
        return JSONResponse({"object": "list", "data": [{"id": name, "object": "model", wire.MODEL_KEY:
                                                         wire.encode_model(INFO, ["temp", "max_tokens"])}
                                                        for name in ["good", "stall", *HOSTILE]]})

    async def chat(request: Request):
        name = (await request.json())["model"]

        async def stream():
            for data in (HOSTILE.get(name) or GOOD if name != "stall" else [WIDEST]):
                yield f"data: {data}\n\n"
                await asyncio.sleep(0.01)
            if name == "stall":
                await asyncio.sleep(60)
            yield "data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])])


@pytest.fixture(scope="module")
def server_url():
    with on_loopback(hostile_app()) as url:
        yield url


def answer(backend: RemoteBackend, events: Events, model: str):
    backend.model = None
    backend.load_model(model)
    events.until_end()
    backend.generate(GenerationRequest(HI, Settings()))
    return events.until_end()[-1]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_reply_ends_the_turn_in_one_line_and_the_next_prompt_works(server_url, name):
    events = Events()
    backend = RemoteBackend(events, server_url).start()
    try:
        ended = answer(backend, events, name)
        after = answer(backend, events, "good")
    finally:
        backend.close()
    if name == "usage_overflow":   # a count that is no count is dropped, the answer kept
        assert ended.event.content == "hi" and ended.event.stats.prompt_tokens == 0
    else:
        assert isinstance(ended, GenerationFailed), ended
        assert "\n" not in ended.message and len(ended.message) < 240 and "Traceback" not in ended.message
    assert isinstance(after.event, Finished) and after.event.content == "Fine. "
    assert len(backend._texts) < wire.MAX_TOKEN_ID


async def test_escape_ends_a_turn_stalled_after_the_widest_frame_and_the_next_prompt_is_answered(server_url, app_env):
    app = DiffusionChatApp(AppOptions(server=server_url, model="stall", settings=Settings()))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "hello")
        first = app.chat.query(AssistantMessage).last()
        await pilot.pause(0.3)
        await pilot.press("escape")
        await wait_for_answer(pilot)
        assert first.status == "cancelled"
        app.connect(server_url, model="good")
        await wait_for(pilot, lambda: app.chat.shown_model is not None and app.chat.shown_model.name == "good",
                       "reconnect")
        await send(pilot, "again")
        await wait_for_answer(pilot)
        assert app.chat.query(AssistantMessage).last().content == "Fine. "
        assert app.is_running
