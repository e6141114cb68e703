"""The ASGI app of `diffusion-chat serve` (Starlette): routes, the API key, body limits, and the two ways a
chat completion is answered (a stream of Server-Sent Events, or one JSON object).

Routes: `GET /health` (no key needed), `GET /v1/models`, `GET /v1/models/{id}`, `POST /v1/chat/completions`.
Every refusal is OpenAI's error object (engine.serve.errors). Requests are queued on the one engine thread
(engine.serve.bridge); `X-Queue-Position` says how many requests were ahead (0: it runs at once).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
from dataclasses import dataclass

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from .. import bounded_json, wire
from ..events import BlockCommitted, Finished, GenerationFailed, GenerationRequest, ModelInfo, Started
from ..errors import SettingsError
from ..settings import Settings, specs_for
from .bridge import SERVER_CONVERSATION, EngineBridge, FrameThrottle, Ticket
from .chunks import DONE, FINISH_REASONS, Completion, sse
from .errors import APIError, error_body
from .requests import ChatRequest, Limits, parse_chat_request, request_name


@dataclass(frozen=True)
class ServeOptions:
    api_key: str | None = None
    limits: Limits = Limits()
    max_body_bytes: int = 32 << 20
    frame_rate: float = 30.0            # the most frames a second one stream gets
    defaults: Settings = Settings()     # the server's settings (its sampler flags); a request overrides them


class EventStream(StreamingResponse):
    """A stream that notices a client going away at once (not only at its next write), whatever ASGI version
    the server speaks: the body is cancelled, and its `finally` cancels the generation."""

    async def __call__(self, scope, receive, send) -> None:
        async with anyio.create_task_group() as group:
            async def stream() -> None:
                try:
                    await self.stream_response(send)
                except OSError:
                    pass  # the client is gone
                group.cancel_scope.cancel()

            group.start_soon(stream)
            await self.listen_for_disconnect(receive)
            group.cancel_scope.cancel()


def create_app(bridge: EngineBridge, options: ServeOptions = ServeOptions()) -> Starlette:
    """The app for a bridge whose model is loaded (`bridge.load`)."""
    info: ModelInfo = dataclasses.replace(
        bridge.info, setting_defaults={**bridge.info.setting_defaults, **options.defaults.to_dict()})
    settings = list(specs_for(info.family))

    def authorize(request: Request) -> None:
        if options.api_key is None:
            return
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(key.strip().encode(), options.api_key.encode()):
            raise APIError(401, "invalid or missing API key (send Authorization: Bearer KEY)", "invalid_api_key")

    def model_entry() -> dict:
        return {"id": info.name, "object": "model", "created": 0, "owned_by": "diffusion-chat",
                wire.MODEL_KEY: wire.encode_model(info, settings)}

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "model": info.name, "queued": bridge.queued})

    async def models(request: Request) -> JSONResponse:
        authorize(request)
        return JSONResponse({"object": "list", "data": [model_entry()]})

    async def model(request: Request) -> JSONResponse:
        authorize(request)
        if request.path_params["model"] != info.name:
            raise APIError(404, f"model {request.path_params['model']!r} is not served here", "model_not_found")
        return JSONResponse(model_entry())

    async def chat_completions(request: Request):
        authorize(request)
        body = await read_json(request, options.max_body_bytes)
        parsed = parse_chat_request(body, info, options.limits)
        try:
            settings = with_defaults(options.defaults, parsed.settings)
            ticket = bridge.submit(GenerationRequest(parsed.messages, settings, think=parsed.think,
                                                     conversation=SERVER_CONVERSATION), on_done=parsed.close)
        except BaseException:
            parsed.close()
            raise
        headers = {"X-Queue-Position": str(ticket.ahead)}
        completion = Completion(info.name)
        if parsed.stream:
            return EventStream(stream(bridge, ticket, parsed, completion, options.frame_rate, info),
                               media_type="text/event-stream",
                               headers={**headers, "Cache-Control": "no-store", "X-Accel-Buffering": "no"})
        return JSONResponse(await whole(request, bridge, ticket, parsed, completion), headers=headers)

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model:path}", model, methods=["GET"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        ],
        exception_handlers={APIError: api_error, HTTPException: http_error, Exception: internal_error},
    )


def with_defaults(defaults: Settings, requested: Settings) -> Settings:
    try:
        return defaults.updated(requested).validated()
    except SettingsError as exc:
        raise APIError(400, exc.render(request_name) + " (with the server's defaults)", "invalid_value",
                       request_name(exc.settings[0]) if exc.settings else None) from None


async def read_json(request: Request, limit: int):
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large(int(declared), limit)
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise too_large(len(body), limit)
    try:
        return bounded_json.loads(body)
    except bounded_json.JSONDepthError as exc:
        raise APIError(400, f"the request body is nested too deeply: {exc}", "invalid_json") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise APIError(400, f"the request body is not valid JSON ({str(exc).splitlines()[0]})", "invalid_json")


def too_large(size: int, limit: int) -> APIError:
    return APIError(413, f"the request body ({size / 2**20:.1f} MiB) is over this server's limit of "
                         f"{limit / 2**20:.1f} MiB", "request_too_large")


async def stream(bridge: EngineBridge, ticket: Ticket, parsed: ChatRequest, completion: Completion,
                 frame_rate: float, info: ModelInfo):
    """The chunks of one streamed answer: role, committed text (and frames, if asked), finish, usage, [DONE]."""
    throttle = FrameThrottle(frame_rate)
    committed = -1
    try:
        yield sse(completion.chunk({"role": "assistant", "content": ""}))
        while True:
            frame, events = await ticket.next(throttle.interval if parsed.frames else None)
            for event in events:
                if isinstance(event, GenerationFailed):
                    yield sse(error_body(event.message, "server_error", "generation_failed"))
                    yield DONE
                    return
                update = event.event
                if isinstance(update, BlockCommitted):
                    committed = update.block
                    if update.content_delta or update.reasoning_delta or parsed.frames:
                        extension = {wire.BLOCK_KEY: wire.encode_block(update)} if parsed.frames else {}
                        yield sse(completion.text(update.content_delta, update.reasoning_delta, **extension))
                elif isinstance(update, Started):
                    if parsed.frames:
                        yield sse(completion.chunk({}, **{wire.STARTED_KEY: wire.encode_started(update)}))
                elif isinstance(update, Finished):
                    for chunk in closing_chunks(update, parsed, completion):
                        yield chunk
                    return
            if parsed.frames and throttle.due(frame, committed):
                yield sse(completion.chunk({}, **{wire.FRAME_KEY: wire.encode_frame(frame.step, info.token_text)}))
    finally:
        # Also when the client went away (this generator is cancelled): the engine stops within one step.
        bridge.cancel(ticket)


def closing_chunks(finished: Finished, parsed: ChatRequest, completion: Completion):
    if finished.content_tail or finished.reasoning_tail:
        yield sse(completion.text(finished.content_tail, finished.reasoning_tail))
    extension = {wire.STATS_KEY: wire.encode_stats(finished.stats, finished.finish_reason)} if parsed.frames else {}
    yield sse(completion.chunk({}, FINISH_REASONS[finished.finish_reason], **extension))
    if parsed.include_usage:
        yield sse(completion.usage_chunk(finished.stats))
    yield DONE


async def whole(request: Request, bridge: EngineBridge, ticket: Ticket, parsed: ChatRequest,
                completion: Completion) -> dict:
    """The non-stream answer; a client that disconnects while waiting cancels it."""
    gone = asyncio.ensure_future(wait_disconnected(request))
    try:
        while True:
            if gone.done():
                raise APIError(499, "the client went away", "client_closed")
            _, events = await ticket.next(0.25)
            for event in events:
                if isinstance(event, GenerationFailed):
                    raise APIError(500, event.message, "generation_failed")
                if isinstance(event.event, Finished):
                    finished = event.event
                    return completion.whole(finished.content, finished.reasoning, finished.finish_reason,
                                            finished.stats)
    finally:
        gone.cancel()
        bridge.cancel(ticket)


async def wait_disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def api_error(request: Request, exc: APIError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status)


async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
    message = {404: f"no route {request.url.path}", 405: f"{request.method} is not allowed on {request.url.path}"}
    return await api_error(request, APIError(exc.status_code, message.get(exc.status_code, str(exc.detail)), code))


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    return await api_error(request, APIError(500, f"internal error: {type(exc).__name__}: {exc}"[:300], "internal"))

