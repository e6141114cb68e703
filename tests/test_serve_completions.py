"""`POST /v1/completions` with OpenAI's `suffix`, through the official `openai` client: the text between a prompt
and a suffix is denoised by the engine's infilling (the same answer as `engine.generate(..., fill=...)`), streamed
or not; what it cannot do is refused with a 400."""

from __future__ import annotations

import httpx
import openai
import pytest

import engine
from engine.generation.fill import FillTemplate, Given, Hole
from engine.settings import Settings

from serve_helpers import CHECKPOINTS, serving

PROMPT, SUFFIX = "def add(a, b):\n", "\n    return c\n"


@pytest.fixture(scope="module", params=["dg_text", "llada2"])
def server(request):
    with serving(request.param) as running:
        yield running


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def local_fill(name: str, prompt: str, suffix: str, hole: int, **settings):
    model = engine.load(CHECKPOINTS / name)
    template = FillTemplate(tuple(s for s in (Given(prompt), Hole(hole), Given(suffix)) if not isinstance(s, Given)
                                  or s.text))
    finished = list(engine.generate(model, messages=[{"role": "user", "content": f"{prompt}___{suffix}"}],
                                    settings=Settings(**settings), fill=template))[-1]
    return "".join(finished.content[a:b] for a, b in finished.filled_spans), finished


def test_a_suffix_is_infilled_like_the_engine_fills_a_template(server):
    name = server.bridge.info.name
    reply = client(server).completions.create(model=name, prompt=PROMPT, suffix=SUFFIX, max_tokens=12, seed=3,
                                              extra_body={"max_denoising_steps": 4})
    filling, finished = local_fill(name, PROMPT, SUFFIX, 12, seed=3, max_denoising_steps=4, max_tokens=12)
    assert reply.object == "text_completion" and reply.id.startswith("cmpl-")
    assert reply.choices[0].text == filling and filling
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage.completion_tokens == 12 and reply.usage.prompt_tokens == finished.stats.prompt_tokens
    assert reply.model_extra["seed"] == 3


def test_streaming_sends_the_same_filling_then_finish_usage_and_done(server):
    name = server.bridge.info.name
    api = client(server)
    whole = api.completions.create(model=name, prompt=PROMPT, suffix=SUFFIX, max_tokens=10, seed=5)
    chunks = list(api.completions.create(model=name, prompt=PROMPT, suffix=SUFFIX, max_tokens=10, seed=5,
                                         stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == whole.choices[0].text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 10
    with httpx.stream("POST", server.url + "/v1/completions",
                      json={"prompt": PROMPT, "max_tokens": 4, "stream": True}) as response:
        lines = [line for line in response.iter_lines() if line]
    assert response.headers["content-type"].startswith("text/event-stream") and lines[-1] == "data: [DONE]"


def test_without_a_suffix_the_prompt_is_continued(server):
    name = server.bridge.info.name
    reply = client(server).completions.create(model=name, prompt="The sky is", max_tokens=8, seed=1)
    filling, _ = local_fill(name, "The sky is", "", 8, seed=1, max_tokens=8)
    assert reply.choices[0].text == filling


def test_a_stop_string_cuts_the_filling(server):
    name = server.bridge.info.name
    api = client(server)
    text = api.completions.create(model=name, prompt=PROMPT, suffix=SUFFIX, max_tokens=12, seed=3).choices[0].text
    stop = text[4:6]
    cut = api.completions.create(model=name, prompt=PROMPT, suffix=SUFFIX, max_tokens=12, seed=3, stop=stop)
    assert cut.choices[0].text == text[:text.index(stop)] and cut.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("fields, param, words", [
    ({"max_tokens": 1000}, "max_tokens", "more than one block"),
    ({"echo": True}, "echo", "not supported"),
    ({"best_of": 2}, "best_of", "not supported"),
    ({"prompt": [1, 2, 3]}, "prompt", "one string"),
    ({"prompt": ["a", "b"]}, "prompt", "one string"),
    ({"suffix": 3}, "suffix", "must be a string"),
    ({"stream_options": {"include_usage": True}}, "stream_options", "stream is true"),
])
def test_what_a_completion_cannot_do_is_400_naming_the_field(server, fields, param, words):
    with pytest.raises(openai.BadRequestError) as raised:
        client(server).completions.create(model=server.bridge.info.name, **{"prompt": PROMPT, **fields})
    assert raised.value.body["param"] == param and words in raised.value.body["message"]
    assert server.bridge.queued == 0


def test_a_prompt_over_the_context_is_400_before_anything_runs():
    with serving("dg_text") as server:
        context = server.bridge.info.context_length
        with pytest.raises(openai.BadRequestError) as raised:
            client(server).completions.create(model="dg_text", prompt="sky " * context, suffix="!", max_tokens=4)
        assert raised.value.body["code"] == "context_length_exceeded" and server.bridge.queued == 0
