"""What an operator sees: one access-log line per request (method, path, status, prompt/completion tokens,
seconds) and `GET /metrics` in Prometheus' text format, checked against what the `openai` client was told."""

from __future__ import annotations

import logging
import re

import httpx
import openai
import pytest

from serve_helpers import QUICK, serving

HI = [{"role": "user", "content": "Why is the sky blue?"}]
LINE = re.compile(r"^(GET|POST) (\S+) (\d{3}) prompt_tokens=(\S+) completion_tokens=(\S+) (\d+\.\d{3})s$")


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture
def logged():
    lines, logger = Lines(), logging.getLogger("diffusion_chat.serve.access")
    level = logger.level
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    try:
        yield lines.lines
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)


def metric(text: str, name: str) -> float:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert found, f"{name} missing from /metrics"
    return float(found.group(1))


def test_access_lines_and_metrics_match_what_clients_got(logged):
    with serving("dg_text", api_key="k") as server:
        api = openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        whole = api.chat.completions.create(model="dg_text", messages=HI, seed=1, extra_body=QUICK)
        chunks = list(api.chat.completions.create(model="dg_text", messages=HI, seed=1, stream=True,
                                                  stream_options={"include_usage": True}, extra_body=QUICK))
        with pytest.raises(openai.BadRequestError):
            api.chat.completions.create(model="dg_text", messages=HI, temperature=-1)
        text = httpx.get(server.url + "/metrics", headers={"Authorization": "Bearer k"}).text
        assert httpx.get(server.url + "/metrics").status_code == 401
    usages = [whole.usage, chunks[-1].usage]
    parsed = [LINE.match(line) for line in logged]
    assert all(parsed), logged
    chat = [m for m in parsed if m.group(2) == "/v1/chat/completions"]
    assert [(m.group(1), m.group(3)) for m in chat] == [("POST", "200"), ("POST", "200"), ("POST", "400")]
    assert [(int(m.group(4)), int(m.group(5))) for m in chat[:2]] == [(u.prompt_tokens, u.completion_tokens)
                                                                      for u in usages]
    assert chat[2].group(4) == "-" and float(chat[0].group(6)) > 0
    assert metric(text, 'diffusion_chat_requests_total{method="POST",path="/v1/chat/completions",status="200"}') == 2
    assert metric(text, 'diffusion_chat_requests_total{method="POST",path="/v1/chat/completions",status="400"}') == 1
    assert metric(text, "diffusion_chat_prompt_tokens_total") == sum(u.prompt_tokens for u in usages)
    assert metric(text, "diffusion_chat_completion_tokens_total") == sum(u.completion_tokens for u in usages)
    assert metric(text, "diffusion_chat_queue_depth") == 0
    blocks = metric(text, "diffusion_chat_denoising_steps_per_block_count")
    steps = metric(text, "diffusion_chat_denoising_steps_per_block_sum")
    assert blocks >= 2 and blocks <= steps <= blocks * QUICK["max_denoising_steps"]
    assert metric(text, 'diffusion_chat_denoising_steps_per_block_bucket{le="4"}') == blocks
    assert metric(text, "diffusion_chat_step_seconds_count") == steps
    assert metric(text, "diffusion_chat_step_seconds_sum") > 0
    assert "# TYPE diffusion_chat_queue_depth gauge" in text


def test_a_text_completion_is_logged_and_counted_with_the_usage_it_reported(logged):
    with serving("dg_text") as server:
        api = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
        reply = api.completions.create(model="dg_text", prompt="The sky is", suffix=" today.", max_tokens=6,
                                     seed=0)
        text = httpx.get(server.url + "/metrics").text
    line = LINE.match(logged[0])
    assert line.group(2) == "/v1/completions" and int(line.group(5)) == reply.usage.completion_tokens == 6
    assert metric(text, "diffusion_chat_completion_tokens_total") == 6
    assert metric(text, 'diffusion_chat_requests_total{method="POST",path="/v1/completions",status="200"}') == 1


def test_the_log_follows_stderr_when_it_is_replaced(monkeypatch):
    """configure_logging once, stderr replaced and the old one closed: lines go to the new one, and no
    'I/O operation on closed file' report (the handler used to hold the stream of the moment)."""
    import io
    import logging

    from engine.serve.run import configure_logging

    first = io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    configure_logging("info")
    first.close()
    second = io.StringIO()
    monkeypatch.setattr("sys.stderr", second)
    logging.getLogger("diffusion_chat.serve").info("POST /v1/models 200")
    lines = second.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].endswith("INFO POST /v1/models 200"), lines
