"""`stop` sequences on `diffusion-chat serve`, through the official `openai` client: the text ends before the
first stop string (also one split across two blocks), the finish reason is `stop`, and the rest of the answer
is not generated."""

from __future__ import annotations

import openai
import pytest

from engine.serve.stops import StopScanner, cut

from serve_helpers import QUICK, Script, serving

HI = [{"role": "user", "content": "Why is the sky blue?"}]
BLOCKS = [("", "Hello "), ("", "wor"), ("", "ld. Then"), ("", " more"), ("", " and more")]


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def test_the_scanner_holds_back_what_could_become_a_stop_string():
    scanner = StopScanner(["world", "Observation:"])
    assert scanner.feed("Hello ") == "Hello "
    assert scanner.feed("wor") == ""            # might be "world"
    assert scanner.feed("m and Obs") == "worm and "
    assert scanner.feed("ervation: x") == "" and scanner.stopped
    assert scanner.feed("after") == "" and scanner.flush() == ""
    assert StopScanner(["xyz"]).feed("abcx") == "abc"
    assert cut("a STOP b STOP", ["STOP"]) == ("a ", True) and cut("plain", ["STOP"]) == ("plain", False)


@pytest.mark.parametrize("stream", [True, False])
def test_a_stop_string_across_blocks_ends_the_answer_before_it_and_cancels_the_rest(stream):
    script = Script(BLOCKS, steps=3, step_s=0.05)  # slow enough that the cancel comes before block 4 ends
    with serving(None, make_worker=script.worker) as server:
        reply = client(server).chat.completions.create(model="scripted", messages=HI, stream=stream,
                                                       stop=["world", "never"])
        if stream:
            chunks = list(reply)
            text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
            reasons = [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices]
            assert reasons[-1] == "stop" and reasons.count("stop") == 1
        else:
            text, reason = reply.choices[0].message.content, reply.choices[0].finish_reason
            assert reason == "stop"
    assert text == "Hello "
    assert script.cancelled_at is not None  # blocks 4 and 5 were never denoised


def test_a_stop_string_cuts_a_real_answer_where_it_first_appears():
    with serving("dg_text") as server:
        api = client(server)
        full = api.chat.completions.create(model="dg_text", messages=HI, seed=2, extra_body=QUICK)
        text = full.choices[0].message.content
        stop = text[len(text) // 2:len(text) // 2 + 3]
        cut_reply = api.chat.completions.create(model="dg_text", messages=HI, seed=2, stop=stop, extra_body=QUICK)
        streamed = api.chat.completions.create(model="dg_text", messages=HI, seed=2, stop=[stop], stream=True,
                                               extra_body=QUICK)
        streamed_text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
    assert cut_reply.choices[0].message.content == text[:text.index(stop)] == streamed_text
    assert cut_reply.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("stop, words", [("", "non-empty"), (["a", 3], "non-empty"), (["a"] * 5, "at most 4")])
def test_bad_stop_values_are_400(stop, words):
    with serving(None, make_worker=Script(BLOCKS).worker) as server:
        with pytest.raises(openai.BadRequestError) as raised:
            client(server).chat.completions.create(model="scripted", messages=HI, stop=stop)
    assert raised.value.body["param"] == "stop" and words in raised.value.body["message"]
