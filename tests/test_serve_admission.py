"""Requests the engine cannot run are refused with a 400 before anything is queued or streamed, so the official
`openai` client raises BadRequestError (and does not retry, as it does 500s)."""

from __future__ import annotations

import httpx
import openai
import pytest

from serve_helpers import QUICK, serving


@pytest.fixture(scope="module")
def server():
    with serving("dg_text", max_tokens=1 << 20) as running:  # the context, not --max-tokens-limit, decides
        yield running


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


@pytest.mark.parametrize("messages", [
    [{"role": "user", "content": ""}],
    [{"role": "system", "content": "You are terse."}],
])
@pytest.mark.parametrize("stream", [False, True])
def test_an_empty_or_system_only_prompt_is_400_not_500(server, messages, stream):
    with pytest.raises(openai.BadRequestError) as raised:
        reply = client(server).chat.completions.create(model="dg_text", messages=messages, stream=stream,
                                                       extra_body=QUICK)
        list(reply) if stream else reply
    assert raised.value.status_code == 400
    assert raised.value.body["code"] == "empty_prompt" and raised.value.body["param"] == "messages"
    assert "the prompt is empty" in raised.value.body["message"]
    assert server.bridge.queued == 0


@pytest.mark.parametrize("stream", [False, True])
def test_a_prompt_over_the_context_is_400_context_length_exceeded_before_the_stream_starts(server, stream):
    context = server.bridge.info.context_length
    huge = [{"role": "user", "content": "sky " * context}]
    response = httpx.post(server.url + "/v1/chat/completions", json={"messages": huge, "stream": stream, **QUICK},
                          timeout=120)
    assert response.status_code == 400 and response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == "context_length_exceeded" and error["type"] == "invalid_request_error"
    assert f"{context:,}" in error["message"]


def test_max_tokens_past_the_room_left_is_context_length_exceeded_naming_max_tokens(server):
    context = server.bridge.info.context_length
    with pytest.raises(openai.BadRequestError) as raised:
        client(server).chat.completions.create(model="dg_text", messages=[{"role": "user", "content": "hi"}],
                                               max_tokens=context, extra_body={"max_denoising_steps": 2})
    assert raised.value.body["code"] == "context_length_exceeded" and raised.value.body["param"] == "max_tokens"


def test_stream_options_without_stream_is_400(server):
    with pytest.raises(openai.BadRequestError) as raised:
        client(server).chat.completions.create(model="dg_text", messages=[{"role": "user", "content": "hi"}],
                                               stream_options={"include_usage": True}, extra_body=QUICK)
    assert raised.value.body["param"] == "stream_options" and "stream is true" in raised.value.body["message"]
