"""What a request's sampling fields do on `diffusion-chat serve`, seen through the official `openai` client:
top-k / top-p where the family's sampler has them (LLaDA-2) and a 400 naming them where it does not
(DiffusionGemma), and a fresh seed per request when none is given."""

from __future__ import annotations

import openai
import pytest

from engine.settings import Settings

from serve_helpers import serving

HI = [{"role": "user", "content": "Why is the sky blue?"}]
QUICK = {"max_tokens": 32, "max_denoising_steps": 4}


@pytest.fixture(scope="module")
def dg_server():
    with serving("dg_text") as server:
        yield server


@pytest.fixture(scope="module")
def llada_server():
    with serving("llada2") as server:
        yield server


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def answer(server, **fields) -> str:
    reply = client(server).chat.completions.create(model=server.bridge.info.name, messages=HI,
                                                   extra_body={**QUICK, **fields})
    return reply.choices[0].message.content


@pytest.mark.parametrize("field, value", [("top_p", 0.01), ("top_k", 3)])
def test_top_p_and_top_k_are_refused_by_diffusiongemma_naming_them(dg_server, field, value):
    with pytest.raises(openai.BadRequestError) as raised:
        answer(dg_server, **{field: value})
    assert raised.value.body["param"] == field and raised.value.body["code"] == "unsupported_parameter"
    assert raised.value.body["message"].startswith(f"{field} is not supported by DiffusionGemma models")


def test_settings_of_the_other_family_are_refused_too(llada_server):
    with pytest.raises(openai.BadRequestError) as raised:
        answer(llada_server, entropy_bound=0.2)
    assert raised.value.body["param"] == "entropy_bound"


def test_top_k_and_top_p_take_effect_on_llada2(llada_server):
    sampled = answer(llada_server, temperature=1.0, seed=1)
    assert answer(llada_server, temperature=1.0, seed=1, top_p=1.0, top_k=0) == sampled  # both "off"
    only_the_best = answer(llada_server, temperature=1.0, seed=1, top_k=1)
    assert only_the_best != sampled
    # A tiny top-p mass keeps only the most likely token too: the same answer as top-k 1.
    assert answer(llada_server, temperature=1.0, seed=1, top_p=0.001) == only_the_best


def test_without_a_seed_each_request_draws_one_reports_it_and_regenerating_differs(dg_server):
    api = client(dg_server)
    replies = [api.chat.completions.create(model="dg_text", messages=HI, temperature=1.0, extra_body=QUICK)
               for _ in range(2)]
    seeds = [reply.model_extra["seed"] for reply in replies]
    assert seeds[0] != seeds[1] and all(isinstance(seed, int) and seed >= 0 for seed in seeds)
    assert replies[0].choices[0].message.content != replies[1].choices[0].message.content
    # The reported seed reproduces its answer, streamed or not.
    again = api.chat.completions.create(model="dg_text", messages=HI, temperature=1.0, seed=seeds[1],
                                        extra_body=QUICK)
    assert again.choices[0].message.content == replies[1].choices[0].message.content
    assert again.model_extra["seed"] == seeds[1]
    chunks = list(api.chat.completions.create(model="dg_text", messages=HI, temperature=1.0, stream=True,
                                              extra_body=QUICK))
    assert len({chunk.model_extra["seed"] for chunk in chunks}) == 1


def test_the_model_entry_advertises_no_default_seed_unless_the_server_has_one(dg_server):
    entry = client(dg_server).models.retrieve("dg_text").model_extra["diffusion_chat"]
    assert "seed" not in entry["setting_defaults"] and "seed" in entry["settings"]
    with serving("dg_text", defaults=Settings(seed=7)) as seeded:
        entry = client(seeded).models.retrieve("dg_text").model_extra["diffusion_chat"]
        assert entry["setting_defaults"]["seed"] == 7
        reply = client(seeded).chat.completions.create(model="dg_text", messages=HI, extra_body=QUICK)
        assert reply.model_extra["seed"] == 7   # the server's --seed is every request's default
