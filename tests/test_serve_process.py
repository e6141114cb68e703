"""A real `diffusion-chat serve` process. ctrl-c with streams running: it stops accepting, every stream gets its
finish chunk (`finish_reason: stop`) and `data: [DONE]`, and the process exits 0 within 5 s; a second ctrl-c
exits at once. `--log-level` decides whether each request gets an access line on stderr."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from conftest import CHECKPOINTS

REPO = Path(__file__).parent.parent
# Long answers (tens of seconds on the tiny checkpoint), so all three are still running or queued at the signal.
LONG = {"max_tokens": 2000, "max_denoising_steps": 64, "stability_threshold": 0, "seed": 0}


@pytest.fixture
def serve_process(request):
    extra = getattr(request, "param", [])
    process = subprocess.Popen([sys.executable, "-m", "tui.cli", "serve", "--model", str(CHECKPOINTS / "dg_text"),
                                "--port", "0", *extra], cwd=REPO, stderr=subprocess.PIPE, text=True)
    url, deadline = None, time.monotonic() + 120
    while url is None and time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line and process.poll() is not None:
            break
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/v1", line)
        url = found.group(1) if found else None
    try:
        assert url, "the server did not start"
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(20)


class Stream(threading.Thread):
    """One streamed chat completion, its raw `data:` lines kept."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url, self.lines, self.error = url, [], None
        self.started = threading.Event()

    def run(self):
        body = {"messages": [{"role": "user", "content": "Tell me about the sky."}], "stream": True,
                "stream_options": {"include_usage": True}, **LONG}
        try:
            with httpx.stream("POST", self.url + "/v1/chat/completions", json=body, timeout=60) as response:
                for line in response.iter_lines():
                    if line:
                        self.lines.append(line)
                        self.started.set()
        except httpx.HTTPError as exc:
            self.error = exc
            self.started.set()

    def finish_reasons(self) -> list:
        chunks = [json.loads(line.removeprefix("data: ")) for line in self.lines if line != "data: [DONE]"]
        return [chunk["choices"][0]["finish_reason"] for chunk in chunks if chunk["choices"]
                and chunk["choices"][0]["finish_reason"]]


def test_ctrl_c_closes_three_running_streams_properly_and_exits_0_within_5_s(serve_process):
    process, url = serve_process
    streams = [Stream(url) for _ in range(3)]
    for stream in streams:
        stream.start()
        assert stream.started.wait(30)
    deadline = time.monotonic() + 30
    while not any('"content":"' in line and '"content":""' not in line for line in streams[0].lines):
        assert time.monotonic() < deadline, "the first stream sent no text"
        time.sleep(0.05)
    signalled = time.monotonic()
    process.send_signal(signal.SIGINT)
    code = process.wait(10)
    elapsed = time.monotonic() - signalled
    for stream in streams:
        stream.join(10)
    log = process.stderr.read()
    assert code == 0 and elapsed < 5, (code, elapsed, log)
    for stream in streams:
        assert stream.error is None, stream.error
        assert stream.lines[-1] == "data: [DONE]"
        assert stream.finish_reasons() == ["stop"]
        assert '"usage"' in stream.lines[-2]
    assert "Traceback" not in log and "timeout graceful shutdown" not in log
    assert "stopping: closing 3 running or queued answer(s)" in log
    with pytest.raises(httpx.ConnectError):  # nothing listens any more
        httpx.get(url + "/health", timeout=2)


def test_a_second_ctrl_c_exits_at_once(serve_process):
    process, url = serve_process
    stream = Stream(url)
    stream.start()
    assert stream.started.wait(30)
    process.send_signal(signal.SIGINT)
    time.sleep(0.05)
    signalled = time.monotonic()
    process.send_signal(signal.SIGINT)
    assert process.wait(5) == 130 and time.monotonic() - signalled < 1.5


@pytest.mark.parametrize("serve_process, lines", [([], 2), (["--log-level", "warning"], 0)],
                         indirect=["serve_process"], ids=["info", "warning"])
def test_log_level_info_writes_one_access_line_per_request(serve_process, lines):
    process, url = serve_process
    httpx.get(url + "/health")
    # A fixed seed: a drawn one ends some answers of this random-weight checkpoint at an EOS before 8 tokens.
    httpx.post(url + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}],
                                                   "max_tokens": 8, "max_denoising_steps": 2, "seed": 0})
    process.send_signal(signal.SIGINT)
    assert process.wait(10) == 0
    access = [line for line in process.stderr.read().splitlines() if " INFO " in line]
    assert len(access) == lines
    if lines:
        assert access[0].endswith("s") and " INFO GET /health 200 prompt_tokens=- completion_tokens=- " in access[0]
        assert re.search(r" INFO POST /v1/chat/completions 200 prompt_tokens=\d+ completion_tokens=8 \d+\.\d{3}s$",
                         access[1]), access
