"""CORS on `diffusion-chat serve` is opt-in (`--cors ORIGIN…`): a browser's preflight from an allowed origin is
answered without the API key, the answer carries the CORS headers, and other origins (or a server without
--cors) get none."""

from __future__ import annotations

import httpx
import pytest

from serve_helpers import QUICK, serving

ORIGIN = "http://localhost:3000"
PREFLIGHT = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}


@pytest.fixture(scope="module")
def server():
    with serving("dg_text", api_key="k", cors_origins=(ORIGIN,)) as running:
        yield running


def test_a_preflight_from_an_allowed_origin_is_answered_without_the_key(server):
    response = httpx.options(server.url + "/v1/chat/completions", headers={"Origin": ORIGIN, **PREFLIGHT})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in response.headers["access-control-allow-methods"]
    assert "authorization" in response.headers["access-control-allow-headers"].lower()


def test_the_request_itself_carries_the_headers_and_still_needs_the_key(server):
    body = {"messages": [{"role": "user", "content": "hi"}], **QUICK}
    answered = httpx.post(server.url + "/v1/chat/completions", json=body,
                          headers={"Origin": ORIGIN, "Authorization": "Bearer k"})
    assert answered.status_code == 200 and answered.headers["access-control-allow-origin"] == ORIGIN
    assert "x-queue-position" in answered.headers["access-control-expose-headers"].lower()
    refused = httpx.post(server.url + "/v1/chat/completions", json=body, headers={"Origin": ORIGIN})
    assert refused.status_code == 401


def test_another_origin_gets_no_cors_headers(server):
    response = httpx.options(server.url + "/v1/chat/completions",
                             headers={"Origin": "http://evil.example", **PREFLIGHT})
    assert response.status_code == 400 and "access-control-allow-origin" not in response.headers


def test_without_cors_there_are_no_cors_headers():
    with serving("dg_text") as plain:
        response = httpx.options(plain.url + "/v1/chat/completions", headers={"Origin": ORIGIN, **PREFLIGHT})
        assert response.status_code == 405 and "access-control-allow-origin" not in response.headers
        models = httpx.get(plain.url + "/v1/models", headers={"Origin": ORIGIN})
        assert models.status_code == 200 and "access-control-allow-origin" not in models.headers


def test_the_cli_takes_origins():
    from engine.cli.serve import serve_parser

    assert serve_parser().parse_args(["--cors", ORIGIN, "*"]).cors == [ORIGIN, "*"]
