"""The ASGI app of `diffusion-chat serve` (Starlette): routes, the API key, body limits, each request checked and
queued; the answers are written by engine.serve.chat (chat completions) and engine.serve.completions.

Routes: `GET /health` (no key needed), `GET /metrics` (Prometheus), `GET /v1/models`, `GET /v1/models/{id}`,
`POST /v1/chat/completions`, `POST /v1/completions` (with `suffix`: infilling, engine.serve.completions). Every
request gets an access-log line (engine.serve.observe).
Every refusal is OpenAI's error object (engine.serve.errors). Requests are queued on the one engine thread
(engine.serve.bridge); `X-Queue-Position` says how many requests were ahead (0: it runs at once).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import logging
import secrets
from dataclasses import dataclass

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Route

from ..io import bounded_json
from . import wire
from ..events import Finished, GenerationRequest, ModelInfo
from ..errors import SettingsError
from ..settings import Settings, specs_for
from .admission import check_prompt, fits
from .bridge import SERVER_CONVERSATION, EngineBridge
from .chat import stream, wait_disconnected, whole
from .completions import TextCompletion, check_hole, finished_event, parse_completion_request, stream_completion
from .chunks import Completion
from .errors import APIError
from .observe import AccessLog, Metrics, note_usage
from .requests import Limits, parse_chat_request, request_name

log = logging.getLogger("diffusion_chat.serve")


@dataclass(frozen=True)
class ServeOptions:
    api_key: str | None = None
    limits: Limits = Limits()
    max_body_bytes: int = 32 << 20
    frame_rate: float = 30.0            # the most frames a second one stream gets
    defaults: Settings = Settings()     # the server's settings (its sampler flags); a request overrides them
    cors_origins: tuple[str, ...] = ()  # browser origins allowed to call the API ("*": any); none: no CORS


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
    defaults = {**bridge.info.setting_defaults, **options.defaults.to_dict()}
    if options.defaults.seed is None:
        defaults.pop("seed", None)   # not the checkpoint's 0: each request draws one (with_seed)
    info: ModelInfo = dataclasses.replace(bridge.info, setting_defaults=defaults)
    settings = list(specs_for(info.family))
    metrics = Metrics(lambda: bridge.queued)

    def finished(request: Request, completion_tokens: int | None = None):
        """What a handler calls when its generation ended: the metrics and the access line hear of it."""
        def note(done: Finished) -> None:
            metrics.finished(done, completion_tokens)
            note_usage(request.scope.setdefault("state", {}), done.stats.prompt_tokens,
                       done.stats.generated_tokens if completion_tokens is None else completion_tokens)
        return note

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

    async def prometheus(request: Request) -> PlainTextResponse:
        authorize(request)
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

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
            settings = with_seed(with_defaults(options.defaults, parsed.settings))
            await check_prompt(info, parsed.messages, parsed.think, settings)
            ticket = bridge.submit(GenerationRequest(parsed.messages, settings, think=parsed.think,
                                                     conversation=SERVER_CONVERSATION), on_done=parsed.close)
        except BaseException:
            parsed.close()
            raise
        headers = {"X-Queue-Position": str(ticket.ahead)}
        completion = Completion(info.name, settings.seed)
        if parsed.stream:
            return EventStream(stream(bridge, ticket, parsed, completion, options.frame_rate, info, finished(request)),
                               media_type="text/event-stream",
                               headers={**headers, "Cache-Control": "no-store", "X-Accel-Buffering": "no"})
        return JSONResponse(await whole(request, bridge, ticket, parsed, completion, finished(request)),
                            headers=headers)

    async def completions(request: Request):
        authorize(request)
        parsed = parse_completion_request(await read_json(request, options.max_body_bytes), info, options.limits)
        settings = with_seed(with_defaults(options.defaults, parsed.settings))
        check_hole(parsed, settings, info)
        messages = parsed.messages()
        # The answer is the template (given text + hole), longer than the hole alone: count the turn's tokens
        # (which hold the same given text) as part of it.
        turn = await check_prompt(info, messages, False, settings)
        fits(info, settings.replace(max_tokens=parsed.hole + turn), turn)
        ticket = bridge.submit(GenerationRequest(messages, settings, conversation=SERVER_CONVERSATION,
                                                 fill=parsed.template()))
        headers = {"X-Queue-Position": str(ticket.ahead)}
        completion = TextCompletion(info.name, settings.seed, parsed.hole)
        if parsed.stream:
            return EventStream(stream_completion(bridge, ticket, parsed, completion, finished(request, parsed.hole)),
                               media_type="text/event-stream",
                               headers={**headers, "Cache-Control": "no-store", "X-Accel-Buffering": "no"})
        gone = asyncio.ensure_future(wait_disconnected(request))
        try:
            done = await finished_event(ticket, bridge, gone)
        finally:
            gone.cancel()
            bridge.cancel(ticket)
        finished(request, parsed.hole)(done)
        return JSONResponse(completion.whole(done, parsed.stops), headers=headers)

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/metrics", prometheus, methods=["GET"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model:path}", model, methods=["GET"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/completions", completions, methods=["POST"]),
        ],
        exception_handlers={APIError: api_error, HTTPException: http_error, Exception: internal_error},
        middleware=[Middleware(AccessLog, metrics=metrics), *cors(options.cors_origins)],
    )


def cors(origins: tuple[str, ...]) -> list[Middleware]:
    """Opt-in CORS, so a browser front end on one of `origins` may call the API (its preflight needs no key;
    the request itself still does)."""
    if not origins:
        return []
    return [Middleware(CORSMiddleware, allow_origins=list(origins), allow_methods=["GET", "POST"],
                       allow_headers=["authorization", "content-type"], max_age=600,
                       expose_headers=["X-Queue-Position", "Retry-After"])]


def with_defaults(defaults: Settings, requested: Settings) -> Settings:
    try:
        return defaults.updated(requested).validated()
    except SettingsError as exc:
        raise APIError(400, exc.render(request_name) + " (with the server's defaults)", "invalid_value",
                       request_name(exc.settings[0]) if exc.settings else None) from None


def with_seed(settings: Settings) -> Settings:
    """A request without a seed (nor a server default) gets a fresh one, so regenerating gives a new answer, as
    OpenAI's and vLLM's servers do; the completion reports it (`seed`), so an answer can be reproduced."""
    return settings if settings.seed is not None else settings.replace(seed=secrets.randbelow(2**31))


async def read_json(request: Request, limit: int):
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large(int(declared), limit)
    body = bytearray()
    try:
        async for piece in request.stream():
            body += piece
            if len(body) > limit:
                raise too_large(len(body), limit)
    except ClientDisconnect:
        # Nobody is left to answer: one line in the log, not a traceback.
        log.warning("%s %s: the client went away while sending its body (%d bytes received)", request.method,
                    request.url.path, len(body))
        raise APIError(499, "the client went away", "client_closed") from None
    try:
        return bounded_json.loads(body)
    except bounded_json.JSONDepthError as exc:
        raise APIError(400, f"the request body is nested too deeply: {exc}", "invalid_json") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise APIError(400, f"the request body is not valid JSON ({str(exc).splitlines()[0]})", "invalid_json")


def too_large(size: int, limit: int) -> APIError:
    return APIError(413, f"the request body ({size / 2**20:.1f} MiB) is over this server's limit of "
                         f"{limit / 2**20:.1f} MiB", "request_too_large")


async def api_error(request: Request, exc: APIError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
    message = {404: f"no route {request.url.path}", 405: f"{request.method} is not allowed on {request.url.path}"}
    return await api_error(request, APIError(exc.status_code, message.get(exc.status_code, str(exc.detail)), code))


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    return await api_error(request, APIError(500, f"internal error: {type(exc).__name__}: {exc}"[:300], "internal"))

