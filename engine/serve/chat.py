"""The two ways a chat completion is answered, once its job is queued: a stream of Server-Sent Events (role,
one chunk per committed block, finish, usage, `[DONE]`) or one JSON object. Both apply the request's `stop`
strings at block commits (engine.serve.stops): the text is cut before the stop string, the job is cancelled
and the finish reason is `stop`.

A job that ends because the server is shutting down (its queue cancelled, `EngineBridge.stopping`) closes like
a cancelled one: a finish chunk with `stop`, then `[DONE]`.
"""

from __future__ import annotations

import asyncio
from typing import Callable

from starlette.requests import Request

from . import wire
from ..events import BlockCommitted, Finished, GenerationFailed, ModelInfo, Started
from .bridge import EngineBridge, FrameThrottle, Ticket
from .chunks import DONE, FINISH_REASONS, Completion, sse
from .errors import APIError, error_body, generation_failed
from .requests import ChatRequest
from .stops import StopScanner, cut

OnFinished = Callable[[Finished], None]


async def stream(bridge: EngineBridge, ticket: Ticket, parsed: ChatRequest, completion: Completion,
                 frame_rate: float, info: ModelInfo, on_finished: OnFinished = lambda finished: None):
    """The chunks of one streamed answer: role, committed text (and frames, if asked), finish, usage, [DONE]."""
    throttle = FrameThrottle(frame_rate)
    stops = StopScanner(parsed.stops)
    committed = -1
    try:
        yield sse(completion.chunk({"role": "assistant", "content": ""}))
        while True:
            frame, events = await ticket.next(throttle.interval if parsed.frames else None)
            for event in events:
                if isinstance(event, GenerationFailed):
                    if bridge.stopping:  # the server's shutdown cancelled it before it ran: close it cleanly
                        yield sse(completion.chunk({}, "stop"))
                    else:
                        yield sse(error_body(event.message, "server_error", "generation_failed"))
                    yield DONE
                    return
                update = event.event
                if isinstance(update, BlockCommitted) and not stops.stopped:
                    committed = update.block
                    content = stops.feed(update.content_delta)
                    if stops.stopped:
                        bridge.cancel(ticket)   # the rest of the answer is not wanted
                    if content or update.reasoning_delta or parsed.frames:
                        extension = {wire.BLOCK_KEY: wire.encode_block(update)} if parsed.frames else {}
                        yield sse(completion.text(content, update.reasoning_delta, **extension))
                elif isinstance(update, Started):
                    if parsed.frames:
                        yield sse(completion.chunk({}, **{wire.STARTED_KEY: wire.encode_started(update)}))
                elif isinstance(update, Finished):
                    on_finished(update)
                    for chunk in closing_chunks(update, parsed, completion, stops):
                        yield chunk
                    return
            if parsed.frames and not stops.stopped and throttle.due(frame, committed):
                yield sse(completion.chunk({}, **{wire.FRAME_KEY: wire.encode_frame(frame.step, info.token_text)}))
    finally:
        # Also when the client went away (this generator is cancelled): the engine stops within one step.
        bridge.cancel(ticket)


def closing_chunks(finished: Finished, parsed: ChatRequest, completion: Completion, stops: StopScanner):
    stopped_before = stops.stopped
    content = stops.feed(finished.content_tail) + stops.flush()
    reasoning = finished.reasoning_tail if not stopped_before else ""
    if content or reasoning:
        yield sse(completion.text(content, reasoning))
    reason = "stop" if stops.stopped else FINISH_REASONS[finished.finish_reason]
    extension = {wire.STATS_KEY: wire.encode_stats(finished.stats, finished.finish_reason)} if parsed.frames else {}
    yield sse(completion.chunk({}, reason, **extension))
    if parsed.include_usage:
        yield sse(completion.usage_chunk(finished.stats))
    yield DONE


async def whole(request: Request, bridge: EngineBridge, ticket: Ticket, parsed: ChatRequest,
                completion: Completion, on_finished: OnFinished = lambda finished: None) -> dict:
    """The non-stream answer; a client that disconnects while waiting cancels it, and so does a stop string
    (as soon as a committed block holds one)."""
    gone = asyncio.ensure_future(wait_disconnected(request))
    seen = StopScanner(parsed.stops)
    try:
        while True:
            if gone.done():
                raise APIError(499, "the client went away", "client_closed")
            _, events = await ticket.next(0.25)
            for event in events:
                if isinstance(event, GenerationFailed):
                    raise generation_failed(event.message, bridge.stopping)
                if isinstance(event.event, BlockCommitted):
                    seen.feed(event.event.content_delta)
                    if seen.stopped:
                        bridge.cancel(ticket)
                if isinstance(event.event, Finished):
                    finished = event.event
                    on_finished(finished)
                    content, stopped = cut(finished.content, parsed.stops)
                    return completion.whole(content, finished.reasoning,
                                            "stop" if stopped else finished.finish_reason, finished.stats)
    finally:
        gone.cancel()
        bridge.cancel(ticket)


async def wait_disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass
