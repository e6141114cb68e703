"""Every bad request to `diffusion-chat serve` is one clean OpenAI error object (never a traceback, never a
hung or dead engine thread)."""

from __future__ import annotations

import json
import logging
import socket
import time

import httpx
import pytest

from serve_helpers import FIXTURES, IMAGE, QUICK, Script, data_url, serving

HI = [{"role": "user", "content": "hi"}]
KEY = "s3cret"


@pytest.fixture(scope="module")
def server():
    with serving("dg_text", api_key=KEY, max_body_bytes=64 << 10) as running:
        yield running


def post(server, body=None, *, content=None, key=KEY, path="/v1/chat/completions"):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if content is None:
        content = json.dumps({"messages": HI, **QUICK, **(body or {})})
    return httpx.post(server.url + path, content=content, headers={**headers, "Content-Type": "application/json"})


def refusal(response, status: int) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "code"} and "\n" not in error["message"]
    return error


@pytest.mark.parametrize("content, code", [
    (b"{not json", "invalid_json"),
    (b"\xff\xfe", "invalid_json"),
    (b"[1, 2]", "invalid_json"),
])
def test_malformed_json_is_400(server, content, code):
    assert refusal(post(server, content=content), 400)["code"] == code


def test_a_huge_body_is_413(server):
    error = refusal(post(server, content=b'{"messages": "' + b"x" * (200 << 10) + b'"}'), 413)
    assert error["code"] == "request_too_large"


def test_a_wrong_or_missing_key_is_401_but_health_needs_none(server):
    assert refusal(post(server, key="nope"), 401)["code"] == "invalid_api_key"
    assert refusal(post(server, key=None), 401)["type"] == "authentication_error"
    assert refusal(httpx.get(server.url + "/v1/models"), 401)["code"] == "invalid_api_key"
    assert httpx.get(server.url + "/health").json()["status"] == "ok"


def test_an_unknown_model_or_route_is_404(server):
    error = refusal(post(server, {"model": "gpt-9"}), 404)
    assert error["code"] == "model_not_found" and "dg_text" in error["message"]
    assert refusal(httpx.get(server.url + "/v2/everything"), 404)["code"] == "not_found"
    assert refusal(httpx.get(server.url + "/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"}),
                   405)["code"] == "method_not_allowed"


@pytest.mark.parametrize("body, param, words", [
    ({"temperature": -1}, "temperature", "temperature must be >= 0"),
    ({"temperature": "hot"}, "temperature", "temperature must be a number"),
    ({"max_denoising_steps": 0}, "max_denoising_steps", "must be a positive integer"),
    ({"diffusion_sampler": "magic"}, "diffusion_sampler", "unknown sampler 'magic'"),
    ({"diffusion_threshold": 1.5}, "diffusion_threshold", "in (0, 1]"),
    ({"max_tokens": 100000}, "max_tokens", "at most 4096"),
    ({"max_tokens": 5, "max_completion_tokens": 6}, "max_completion_tokens", "disagree"),
    ({"messages": []}, "messages", "non-empty list"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", "must be one of"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].role", "tool messages"),
    ({"tools": [{"type": "function"}]}, "tools", "not supported"),
    ({"n": 2}, "n", "not supported"),
    ({"stream": "yes"}, "stream", "true or false"),
])
def test_bad_fields_are_400_naming_the_field(server, body, param, words):
    error = refusal(post(server, body), 400)
    assert error["param"] == param and words in error["message"]


def test_unknown_fields_are_ignored(server):
    response = post(server, {"frobnicate": True, "user": "me", "stream_options": None})
    assert response.status_code == 200 and response.json()["choices"][0]["finish_reason"] in ("stop", "length")


def image_message(url: str) -> dict:
    return {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                       {"type": "text", "text": "what?"}]}]}


def test_images_audio_and_video_for_a_text_only_model_are_refused(server):
    assert "text-only" in refusal(post(server, image_message(data_url(IMAGE / "image.png"))), 400)["message"]
    audio = {"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAAA"}}]}]}
    assert refusal(post(server, audio), 400)["code"] == "unsupported_content"


@pytest.fixture(scope="module")
def vision_server():
    with serving("dg_vision", max_image_bytes=1 << 20) as running:
        yield running


@pytest.mark.parametrize("url, status, words", [
    ("data:image/png;base64,bm90IGFuIGltYWdl", 400, "is not an image"),
    ("data:image/png;base64,@@@", 400, "not valid base64"),
    ("data:video/mp4;base64,AAAA", 400, "audio/video"),
    ("data:image/png;base64," + "A" * (2 << 20), 413, "over this server's limit"),
    ("https://example.com/cat.png", 400, "does not fetch image URLs"),
    (str(IMAGE / "image.png"), 400, "--allow-local-files"),
    ("file://" + str(FIXTURES / "nothing.png"), 400, "--allow-local-files"),
])
def test_a_bad_image_is_one_clean_error(vision_server, url, status, words):
    response = httpx.post(vision_server.url + "/v1/chat/completions", json={**image_message(url), **QUICK})
    assert words in refusal(response, status)["message"]


def test_local_files_are_read_only_when_allowed():
    with serving("dg_vision", allow_local_files=True) as running:
        good = httpx.post(running.url + "/v1/chat/completions", json={**image_message(str(IMAGE / "image.png")), **QUICK})
        missing = httpx.post(running.url + "/v1/chat/completions",
                             json={**image_message("file://" + str(FIXTURES / "nothing.png")), **QUICK})
    assert good.status_code == 200
    assert "image not found" in refusal(missing, 400)["message"]


def test_an_engine_failure_mid_stream_is_one_error_chunk_then_done_and_the_thread_survives():
    script = Script([("", "first block "), ("", "never")], fail_after=1)
    with serving(None, make_worker=script.worker) as running:
        with httpx.stream("POST", running.url + "/v1/chat/completions", json={"messages": HI, "stream": True}) as r:
            lines = [line for line in r.iter_lines() if line.startswith("data:")]
        failed = httpx.post(running.url + "/v1/chat/completions", json={"messages": HI})
        script.fail_after = None
        again = httpx.post(running.url + "/v1/chat/completions", json={"messages": HI})
    assert r.status_code == 200 and lines[-1] == "data: [DONE]"
    error = json.loads(lines[-2][len("data: "):])["error"]
    assert error["message"] == "RuntimeError: the scripted engine broke" and error["code"] == "generation_failed"
    assert json.loads(lines[1][len("data: "):])["choices"][0]["delta"]["content"] == "first block "
    assert refusal(failed, 500)["message"] == "RuntimeError: the scripted engine broke"
    assert again.json()["choices"][0]["message"]["content"] == "first block never"


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def test_a_body_cut_off_mid_upload_is_one_log_line_without_a_traceback(server):
    lines = Lines()
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "diffusion_chat.serve")]
    for logger in loggers:
        logger.addHandler(lines)
    try:
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
                         b"\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n" + b'{"messages": ' * 20)
            time.sleep(0.3)
        deadline = time.monotonic() + 5
        while not lines.records and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # anything else it would log (a traceback) comes now
    finally:
        for logger in loggers:
            logger.removeHandler(lines)
    problems = [record for record in lines.records if record.levelno >= logging.WARNING]
    assert len(problems) == 1 and not any(record.exc_info for record in lines.records), \
        [record.getMessage() for record in lines.records]
    assert "the client went away while sending its body (260 bytes received)" in problems[0].getMessage()
    assert post(server).status_code == 200  # and the server carries on
