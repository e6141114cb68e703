"""The status bar and the token counter against a server (issue 24, item 15), at 80×24 and 100×30: the live
tok/s stays on the line against `diffusion-chat serve`, a server that sends no token counts gets no invented
`0.0 tok/s`, the counter shows what the server counted, and a long model id (mlx-vlm reports the folder)
gives way to the numbers."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from engine.settings import Settings
from tui.app import AppOptions, DiffusionChatApp
from tui.widgets.messages import AssistantMessage
from tui.widgets.token_count import TokenCount

from serve_helpers import on_loopback, serving
from tui_helpers import app_env, paced_worker, send, wait_for, wait_for_answer, wait_for_model  # noqa: F401

SIZES = [(80, 24), (100, 30)]
LONG_ID = "/Users/me/models/mlx-community/diffusiongemma-26B-A4B-it-4bit-with-a-long-folder-name"
BLOCKS = ("Rayleigh scattering: shorter wavelengths scatter more, ", "so the sky looks blue.")


def screen_lines(app) -> list[str]:
    return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]


def status_line(app) -> str:
    return screen_lines(app)[-2]   # above the footer


def fake_server(usage: dict | None):
    """An OpenAI-compatible server as mlx-vlm answers: the model's folder as its id, one chunk per committed block,
    usage on the finishing chunk only if `usage` is given. The second block waits for `release`."""
    release = threading.Event()

    async def models(request: Request):
        return JSONResponse({"object": "list", "data": [{"id": LONG_ID, "object": "model", "owned_by": "mlx-vlm"}]})

    def chunk(delta: dict, finish: str | None = None, **extra) -> str:
        return "data: " + json.dumps({"object": "chat.completion.chunk", "model": LONG_ID, "choices": [
            {"index": 0, "delta": delta, "finish_reason": finish}], **extra}) + "\n\n"

    async def stream():
        yield chunk({"role": "assistant", "content": ""})
        yield chunk({"content": BLOCKS[0]})
        while not release.is_set():
            await asyncio.sleep(0.01)
        yield chunk({"content": BLOCKS[1]})
        yield chunk({}, "stop", **({"usage": usage} if usage else {}))
        yield "data: [DONE]\n\n"

    async def chat(request: Request):
        await request.json()
        return StreamingResponse(stream(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])])
    return app, release


def counter(app) -> TokenCount:
    return app.chat.query_one(TokenCount)


def on_screen(widget) -> bool:
    return widget.display and widget.region.height > 0 and widget.screen.region.contains_region(widget.region)


@pytest.mark.parametrize("size", SIZES)
async def test_a_server_without_token_counts_shows_blocks_and_time_but_no_invented_rate(app_env, size):
    server, release = fake_server(usage=None)
    with on_loopback(server) as url:
        app = DiffusionChatApp(AppOptions(server=url))
        async with app.run_test(size=size) as pilot:
            await wait_for_model(pilot)
            line = status_line(app)
            assert LONG_ID not in line and "diffusi" in line and "ready" in line, line   # the id gave way
            await send(pilot, "why blue?")
            answer = app.chat.query(AssistantMessage).last()
            await wait_for(pilot, lambda: answer.content == BLOCKS[0], "the first block")
            await wait_for(pilot, lambda: "1 block committed" in status_line(app), "the live line")
            assert "tok/s" not in status_line(app)
            release.set()
            await wait_for_answer(pilot)
            await pilot.pause()
            line = status_line(app)
            assert "2 blocks" in line and "stop" in line and "tok/s" not in line, line
            saved = app.store.get_message(answer.message_id)
            assert "tokens_per_s" not in saved.stats and "generated_tokens" not in saved.stats
            assert not counter(app).display   # nothing counted, no context known: no counter rather than a guess


@pytest.mark.parametrize("size", SIZES)
async def test_a_server_with_usage_gets_its_rate_and_a_counter_of_what_it_counted(app_env, size):
    server, release = fake_server(usage={"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32})
    release.set()
    with on_loopback(server) as url:
        app = DiffusionChatApp(AppOptions(server=url))
        async with app.run_test(size=size) as pilot:
            await wait_for_model(pilot)
            await send(pilot, "why blue?")
            await wait_for_answer(pilot)
            await wait_for(pilot, lambda: counter(app).display, "the counter")
            await pilot.pause()
            assert str(counter(app).render()) == "≥32 tokens" and on_screen(counter(app))
            line = status_line(app)
            rate = line.split(" tok/s")[0].rsplit(" ", 1)[-1]
            assert float(rate) > 0 and "2 blocks" in line, line


@pytest.mark.parametrize("size", SIZES)
async def test_against_serve_the_live_rate_stays_visible_and_the_counter_shows_the_context(app_env, size):
    settings = Settings(max_tokens=40, max_denoising_steps=24, seed=4)
    hold = threading.Event()   # the first step waits until the live line has been seen once
    with serving("dg_text", make_worker=lambda notify: paced_worker(notify, 0.02, hold)) as server:
        app = DiffusionChatApp(AppOptions(server=server.url, settings=settings))
        async with app.run_test(size=size) as pilot:
            await wait_for_model(pilot)
            await wait_for(pilot, lambda: counter(app).display, "the counter")   # counted once typing pauses
            assert str(counter(app).render()) == f"≥0 / {app.model_info.context_length:,} tokens"
            await send(pilot, "hi")
            await wait_for(pilot, lambda: "step " in status_line(app), "the live line")
            live = [status_line(app)]
            hold.set()
            while app.session.generation is not None:
                await pilot.pause(0.02)
                line = status_line(app)
                if "step " in line:   # a block being denoised
                    live.append(line)
            await wait_for_answer(pilot)
            assert live and all(float(line.split(" tok/s")[0].rsplit(" ", 1)[-1]) > 0 for line in live), live
            saved = app.store.get_message(app.chat.query(AssistantMessage).last().message_id).stats
            await wait_for(pilot, lambda: "≥0" not in str(counter(app).render()), "the counter after the answer")
            total = saved["prompt_tokens"] + saved["generated_tokens"]
            assert str(counter(app).render()) == f"≥{total:,} / {app.model_info.context_length:,} tokens"
            # Its region is laid out on the refresh after the wider text, not with it: under load (three
            # suites at once) the check ran between the two.
            await wait_for(pilot, lambda: on_screen(counter(app)), "the counter on screen")
