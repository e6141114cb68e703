"""Every family's modules have the interface engine.models.families declares (its Protocols), loaded through the
`Family` object's typed accessors; and a request builds its denoiser once, also when max_tokens is clamped."""

from __future__ import annotations

import inspect

import pytest

import engine
from engine.models.families import FAMILIES, Family, GenerationModule, NetworkModule, family_label

from conftest import CHECKPOINTS


@pytest.mark.parametrize("model_type", list(FAMILIES))
def test_each_familys_modules_satisfy_the_protocols(model_type):
    family = FAMILIES[model_type]
    assert isinstance(family, Family) and family.model_type == model_type
    network, generation = family.network(), family.generation()
    assert isinstance(network, NetworkModule), network.__name__
    assert isinstance(generation, GenerationModule), generation.__name__
    # Same parameters as the Protocols' methods (names and order), so a call written against them works.
    for module, protocol in ((network, NetworkModule), (generation, GenerationModule)):
        for name in ("make_processor", "plan_for", "build", "checkpoint_defaults"):
            if hasattr(protocol, name):
                ours = list(inspect.signature(getattr(module, name)).parameters)
                theirs = [p for p in inspect.signature(getattr(protocol, name)).parameters if p != "self"]
                assert ours == theirs, (module.__name__, name)


def test_a_text_only_family_has_no_image_processor():
    assert FAMILIES["llada2_moe"].network().make_processor(CHECKPOINTS / "llada2", None) is None


def test_labels():
    assert family_label("diffusion_gemma") == "DiffusionGemma" and family_label("other") == "other"


@pytest.mark.parametrize("checkpoint", ["dg_text", "llada2"])
def test_a_request_builds_its_denoiser_once_even_when_max_tokens_is_clamped(checkpoint, monkeypatch):
    model = engine.load(str(CHECKPOINTS / checkpoint))
    generation = FAMILIES[model.family].generation()
    builds = []
    original = generation.build
    monkeypatch.setattr(generation, "build", lambda *args, **kwargs: builds.append(args[1]) or original(*args,
                                                                                                          **kwargs))
    # A context too short for the checkpoint's default max_tokens after this prompt: max_tokens is clamped.
    default = model.setting_defaults()["max_tokens"]
    prompt = [5] * 10
    short = 10 + default // 2
    if isinstance(getattr(type(model.network), "context_length", None), property):
        monkeypatch.setattr(type(model.network), "context_length", property(lambda self: short))
    else:
        monkeypatch.setattr(model.network, "context_length", short)
    events = engine.generate(model, prompt_ids=prompt, settings=engine.Settings(max_denoising_steps=1))
    first = next(iter(events))
    assert type(first).__name__ == "Started"
    assert len(builds) == 1 and builds[0].max_tokens < default
