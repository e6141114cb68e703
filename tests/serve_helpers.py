"""Helpers for the server tests: `diffusion-chat serve` on 127.0.0.1 (a real tiny checkpoint, or a scripted
generator), and a replay server for the recorded streams of other servers (tests/fixtures/remote)."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from engine.events import BlockCommitted, Finished, ModelInfo, Started, Stats, Step
from engine.serve.app import ServeOptions
from engine.serve.bridge import EngineBridge
from engine.serve.requests import Limits
from engine.serve.run import BackgroundServer
from engine.thread.worker import EngineWorker

FIXTURES = Path(__file__).parent / "fixtures"
CHECKPOINTS = FIXTURES / "checkpoints"
RECORDINGS = FIXTURES / "remote"
IMAGE = FIXTURES / "golden" / "dg_vision"
# Small enough for a whole answer in well under a second on the tiny checkpoints.
QUICK = {"max_tokens": 40, "max_denoising_steps": 4}


@contextmanager
def serving(checkpoint: str | None = "dg_text", make_worker=EngineWorker, max_queue: int = 16, **options):
    """`diffusion-chat serve` of a fixture checkpoint (or of a scripted worker) on a free loopback port."""
    bridge = EngineBridge(make_worker, max_queue=max_queue).start()
    bridge.load(str(CHECKPOINTS / checkpoint) if checkpoint else "scripted")
    limits = Limits(**{name: options.pop(name) for name in list(options) if name in Limits.__dataclass_fields__})
    server = BackgroundServer(bridge, ServeOptions(limits=limits, **options)).start()
    try:
        yield server
    finally:
        server.stop()


def data_url(path: Path, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode()}"


# ---- a scripted engine: same signatures as engine.load / engine.generate ------------------------------


class ScriptedModel:
    def __init__(self, supports_images: bool = False):
        self.supports_images = supports_images

    def info(self) -> ModelInfo:
        return ModelInfo(name="scripted", family="diffusion_gemma", label="Scripted", supports_images=self.supports_images,
                         setting_defaults={"max_tokens": 64}, token_texts=tuple(f"t{i}" for i in range(64)))


def scripted_step(block: int, step: int, length: int = 8) -> Step:
    return Step(block=block, step=step, max_steps=100, canvas=np.arange(length, dtype=np.int32),
                candidates=np.arange(length, dtype=np.int32) + 1, accepted=np.arange(length) < step,
                newly_accepted=1, scores=np.full(length, 0.5, np.float32), score_kind="entropy", temperature=None,
                noise_is_mask=False)


class Script:
    """A `generate` that answers with `blocks` [(reasoning, content), ...]; `steps` steps of `step_s` seconds
    per block (checking cancel at each, like the engine); `fail_after` blocks then raises."""

    def __init__(self, blocks, steps: int = 2, step_s: float = 0.0, fail_after: int | None = None):
        self.blocks, self.steps, self.step_s, self.fail_after = blocks, steps, step_s, fail_after
        self.calls: list[dict] = []
        self.steps_after_cancel = 0
        self.cancelled_at: float | None = None
        self.release = threading.Event()      # set to let a `hold` script finish
        self.hold = False

    def worker(self, notify) -> EngineWorker:
        return EngineWorker(notify, load=lambda ref, progress=None, cancel=None: ScriptedModel(), generate=self)

    def __call__(self, model, messages, settings, think, cancel, session, progress=None):
        self.calls.append({"messages": messages, "settings": settings, "think": think})
        yield Started(prompt_tokens=5, encoded_tokens=5, prefill_s=0.001, block_length=8)
        content = reasoning = ""
        for index, (think_text, text) in enumerate(self.blocks):
            if self.fail_after is not None and index == self.fail_after:
                raise RuntimeError("the scripted engine broke")
            for step in range(self.steps):
                while self.hold and not self.release.is_set() and not cancel.is_set():
                    time.sleep(0.005)
                if cancel.is_set():
                    self.cancelled_at = self.cancelled_at or time.monotonic()
                    yield Finished("cancelled", (), content, reasoning, stats(index))
                    return
                time.sleep(self.step_s)
                yield scripted_step(index, step)
            content, reasoning = content + text, reasoning + think_text
            yield BlockCommitted(block=index, token_ids=(1,) * 4, committed=(1,) * 8, content_delta=text,
                                 reasoning_delta=think_text, steps=self.steps, stop_reason="max_denoising_steps")
        yield Finished("stop", (1,) * 4 * len(self.blocks), content, reasoning, stats(len(self.blocks)))


def stats(blocks: int) -> Stats:
    return Stats(steps_per_block=(2,) * blocks, prompt_tokens=5, generated_tokens=4 * blocks, work_tokens=16 * blocks,
                 prefill_s=0.001, denoise_s=0.01, total_s=0.02, peak_memory_bytes=0)


# ---- replaying other servers' recorded streams ------------------------------------------------------------


def replay_app(owner: str = "vllm") -> Starlette:
    """`/v1/models` lists one model per recording (tests/fixtures/remote/*.sse); a chat completion for model
    X replays X.sse. `refuse_<server>` models answer with that server's refusal (refusals.json)."""
    recordings = sorted(path.stem for path in RECORDINGS.glob("*.sse"))
    refusals = json.loads((RECORDINGS / "refusals.json").read_text())
    seen: list[dict] = []

    async def models(request: Request):
        ids = recordings + [f"refuse_{name}" for name in refusals]
        return JSONResponse({"object": "list", "data": [{"id": i, "object": "model", "owned_by": owner} for i in ids]})

    async def chat(request: Request):
        body = await request.json()
        seen.append(body)
        name = body["model"]
        if name.startswith("refuse_"):
            refusal = refusals[name.removeprefix("refuse_")]
            return JSONResponse(refusal["body"], status_code=refusal["status"])
        return StreamingResponse(replay(RECORDINGS / f"{name}.sse"), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])])
    app.state.seen = seen
    return app


async def replay(path: Path):
    for event in path.read_text().split("\n\n"):
        if event.startswith(": replay: drop"):
            raise ConnectionAbortedError("replay: the server goes away")
        if event.startswith(": replay: wait"):
            await asyncio.sleep(float(event.split()[3]))
            continue
        if event.strip():
            yield event + "\n\n"
            await asyncio.sleep(0.005)


@contextmanager
def replaying(owner: str = "vllm"):
    """The replay server on a free loopback port; yields (url, app)."""
    app = replay_app(owner)
    with on_loopback(app) as url:
        yield url, app


@contextmanager
def on_loopback(app):
    """Any ASGI app under uvicorn on a free loopback port, in a thread; yields its URL."""
    import uvicorn

    from engine.serve.run import bind

    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
