"""What an operator sees of `diffusion-chat serve`: one access-log line per request (logger
`diffusion_chat.serve.access`: method, path, status, prompt/completion tokens, seconds) and the counters behind
`GET /metrics` (Prometheus' text format, written here: a few counters need no client library).

A handler that ran a generation leaves its `Stats` in the request's state (`note_usage`); the access-log
middleware, which sees every request from its first byte to its last (a stream's too), does the rest.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Callable

from ..events import Finished

access_log = logging.getLogger("diffusion_chat.serve.access")

# The paths metrics are labelled with; anything else is "other", so a scan of random URLs cannot grow them.
KNOWN_PATHS = ("/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/completions")
# Buckets of the steps-per-block histogram (DiffusionGemma's default is 48 steps at most, LLaDA-2's 32).
STEP_BUCKETS = (1, 2, 4, 8, 16, 32, 48, 64, 128, 256)


class Metrics:
    def __init__(self, queue_depth: Callable[[], int] = lambda: 0):
        self.queue_depth = queue_depth
        self.requests: Counter = Counter()          # (method, path, status) -> count
        self.finishes: Counter = Counter()          # the engine's finish reason -> count
        self.prompt_tokens = self.completion_tokens = 0
        self.block_steps: Counter = Counter()       # bucket bound -> blocks with at most that many steps
        self.blocks = self.steps = 0
        self.denoise_s = 0.0

    def request(self, method: str, path: str, status: int) -> None:
        label = path if path in KNOWN_PATHS else ("/v1/models" if path.startswith("/v1/models/") else "other")
        self.requests[(method, label, status)] += 1

    def finished(self, finished: Finished, completion_tokens: int | None = None) -> None:
        """A generation ended; `completion_tokens`: what its usage reported, when not the engine's count (a text
        completion counts its hole, not the given text around it)."""
        stats = finished.stats
        self.finishes[finished.finish_reason] += 1
        self.prompt_tokens += stats.prompt_tokens
        self.completion_tokens += stats.generated_tokens if completion_tokens is None else completion_tokens
        for steps in stats.steps_per_block:
            self.blocks += 1
            self.steps += steps
            for bound in STEP_BUCKETS:
                if steps <= bound:
                    self.block_steps[bound] += 1
        self.denoise_s += stats.denoise_s

    def render(self) -> str:
        lines = ["# HELP diffusion_chat_requests_total HTTP requests answered, by method, path and status.",
                 "# TYPE diffusion_chat_requests_total counter"]
        lines += [f'diffusion_chat_requests_total{{method="{m}",path="{p}",status="{s}"}} {n}'
                  for (m, p, s), n in sorted(self.requests.items())]
        lines += ["# HELP diffusion_chat_generations_total Generations that ended, by the engine's finish reason.",
                  "# TYPE diffusion_chat_generations_total counter"]
        lines += [f'diffusion_chat_generations_total{{finish_reason="{r}"}} {n}' for r, n in sorted(self.finishes.items())]
        for name, value, what in (("prompt_tokens", self.prompt_tokens, "Prompt tokens read"),
                                  ("completion_tokens", self.completion_tokens, "Answer tokens generated")):
            lines += [f"# HELP diffusion_chat_{name}_total {what}.", f"# TYPE diffusion_chat_{name}_total counter",
                      f"diffusion_chat_{name}_total {value}"]
        lines += ["# HELP diffusion_chat_queue_depth Requests waiting or running now.",
                  "# TYPE diffusion_chat_queue_depth gauge", f"diffusion_chat_queue_depth {self.queue_depth()}",
                  "# HELP diffusion_chat_denoising_steps_per_block Denoising steps each committed block took.",
                  "# TYPE diffusion_chat_denoising_steps_per_block histogram"]
        lines += [f'diffusion_chat_denoising_steps_per_block_bucket{{le="{bound}"}} {self.block_steps[bound]}'
                  for bound in STEP_BUCKETS]
        lines += [f'diffusion_chat_denoising_steps_per_block_bucket{{le="+Inf"}} {self.blocks}',
                  f"diffusion_chat_denoising_steps_per_block_sum {self.steps}",
                  f"diffusion_chat_denoising_steps_per_block_count {self.blocks}",
                  "# HELP diffusion_chat_step_seconds Seconds per denoising step (sum over steps, and steps).",
                  "# TYPE diffusion_chat_step_seconds summary",
                  f"diffusion_chat_step_seconds_sum {self.denoise_s:.6f}", f"diffusion_chat_step_seconds_count {self.steps}"]
        return "\n".join(lines) + "\n"


def note_usage(scope_state: dict, prompt_tokens: int, completion_tokens: int) -> None:
    """A handler's generation ended: its tokens go into this request's access-log line."""
    scope_state["usage"] = (prompt_tokens, completion_tokens)


class AccessLog:
    """ASGI middleware: counts every HTTP request and logs one line when its response has been sent whole."""

    def __init__(self, app, metrics: Metrics):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        state = scope.setdefault("state", {})
        status = [500]   # what the client gets when the app raised before answering

        async def sending(message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.request(scope["method"], scope["path"], status[0])
            prompt, completion = state.get("usage", ("-", "-"))
            access_log.info("%s %s %d prompt_tokens=%s completion_tokens=%s %.3fs", scope["method"], scope["path"],
                            status[0], prompt, completion, time.perf_counter() - start)
