"""`diffusion-chat serve`: load the model on the engine thread, bind the socket, and serve the ASGI app with
uvicorn until Ctrl-C (which closes every running stream properly, then exits 0; a second one exits at once).
Binds to loopback unless told otherwise. `BackgroundServer` runs the same on a thread of the calling process
(the tests and the benchmark)."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import socket
import sys
import threading
import time
from typing import Callable

from .app import ServeOptions, create_app
from .batch_worker import DEFAULT_MAX_BATCH, worker_factory
from .bridge import EngineBridge, LoadError


class ServeError(Exception):
    """The server cannot start (one line)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so a taken port is one clear line (port 0: any free port)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ServeError(f"cannot resolve --host {host}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


# How long a shutdown waits for streams to send their last chunks (they end within one denoising step of being
# cancelled); past it uvicorn cuts them. With the engine thread's join this keeps ctrl-c under 5 s.
GRACEFUL_S = 3.0


def _uvicorn_server(app, bridge: EngineBridge, say: Callable[[str], None] = lambda line: None):
    import uvicorn

    class GracefulServer(uvicorn.Server):
        """uvicorn, whose first ctrl-c (or SIGTERM) cancels every job so each stream closes properly (finish
        chunk, `[DONE]`) while no new connection is accepted, and exits 0; a second ctrl-c exits at once."""

        async def serve(self, sockets=None) -> None:
            self.loop = asyncio.get_running_loop()
            await super().serve(sockets)

        def handle_exit(self, sig, frame) -> None:
            if self.should_exit:
                os.write(2, b"diffusion-chat serve: stopped at once\n")
                os._exit(130)
            self.should_exit = True
            # A signal handler must not take the bridge's or the worker's locks (the interrupted code may hold
            # them): the cancelling runs on the event loop. Unlike uvicorn's handler this one does not note the
            # signal for re-raising after the shutdown, so a stop that was asked for ends in a clean exit 0.
            self.loop.call_soon_threadsafe(self.stop_jobs)

        def stop_jobs(self) -> None:
            running = bridge.stop_all()
            say(f"stopping: closing {running} running or queued answer(s) (ctrl-c again to quit at once)"
                if running else "stopping")

    # uvicorn's own access log is off: engine.serve.observe writes one line per request, with its tokens.
    return GracefulServer(uvicorn.Config(app, log_level="warning", access_log=False,
                                         timeout_graceful_shutdown=GRACEFUL_S, lifespan="off"))


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is when a line is logged: a handler bound to the stream of the moment
    wrote into a closed file once that stream was replaced (a host program's, or a test's, captured stderr)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def configure_logging(level: str) -> None:
    """The server's log (access lines at info, refusals to log at warning) on stderr, at `level`."""
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S"))
    logger = logging.getLogger("diffusion_chat")
    logger.handlers[:] = [handler]
    logger.setLevel(level.upper())
    logger.propagate = False


def serve(model_ref: str, host: str, port: int, options: ServeOptions, max_queue: int = 16,
          say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
          log_level: str = "info", max_batch: int = DEFAULT_MAX_BATCH) -> None:
    """Blocks until the server stops (Ctrl-C). Raises LoadError or ServeError (one line). Up to `max_batch`
    requests are denoised together (engine.serve.batch_worker; 1: one after another)."""
    configure_logging(log_level)
    sock = bind(host, port)
    bridge = EngineBridge(worker_factory(max_batch), max_queue=max_queue).start()
    try:
        say(f"loading {model_ref}…")
        info = bridge.load(model_ref)
        for notice in info.notices:
            say(f"warning: {notice}")
        if not is_loopback(host) and options.api_key is None:
            say(f"warning: listening on {host} without --api-key: anyone who can reach it can use the model")
        say(f"serving {info.name} ({info.label}) on http://{host}:{sock.getsockname()[1]}/v1 (Ctrl-C stops)")
        _uvicorn_server(create_app(bridge, options), bridge, say).run(sockets=[sock])
    finally:
        sock.close()
        bridge.close()


class BackgroundServer:
    """The server on a thread of this process, on 127.0.0.1 and a free port: `start()`, `url`, `stop()`."""

    def __init__(self, bridge: EngineBridge, options: ServeOptions = ServeOptions()):
        self.bridge = bridge
        self._sock = bind("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._server = _uvicorn_server(create_app(bridge, options), bridge)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="diffusion-chat-serve", daemon=True)

    def start(self, timeout: float = 20.0) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServeError("the background server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()
        self.bridge.close()


__all__ = ["BackgroundServer", "LoadError", "ServeError", "bind", "serve"]
