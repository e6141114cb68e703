"""Infilling and span re-denoising in the engine (`engine.generate(fill=...)`): given positions never change,
the engine equals a hand-driven replay of recorded draws, refusals, and the prefix cache across a revision."""

from __future__ import annotations

import random

import mlx.core as mx
import numpy as np
import pytest
from conftest import CHECKPOINTS

import engine
from engine.errors import InputError
from engine.events import BlockCommitted, Finished, Started, Step
from engine.generation.fill import FillTemplate, Given, Hole, parse_fill, revision_template, split_blocks, tokenize
from engine.generation.diffusion_gemma import resolve_plan as dg_plan
from engine.generation.llada2 import propose, resolve_plan as llada_plan
from engine.generation.sampling import (
    entropy_bound_mask,
    linear_temperature,
    select_transfer,
    threshold_schedule,
    transfer_schedule,
)
from engine.generation.fused import analyse
from engine.generation.randomness import Draws, SeededRandomness

WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "ran", "far", "away", "!", "sky", "is", "blue"]
PROMPT = [2, 105, 194, 488, 191, 107, 164, 181, 198]


@pytest.fixture(scope="module")
def dg():
    return engine.load(CHECKPOINTS / "dg_text")


@pytest.fixture(scope="module")
def llada():
    return engine.load(CHECKPOINTS / "llada2")


class Recorded:
    """The seeded draws, kept by (kind, block, step) so a hand-driven loop can replay them."""

    def __init__(self, seed: int, vocab: int):
        self.inner = SeededRandomness(seed, vocab)
        self.draws: dict[tuple[str, int, int], np.ndarray] = {}

    def tokens(self, count, *, block, step):
        out = self.inner.tokens(count, block=block, step=step)
        self.draws[("tokens", block, step)] = np.array(out).reshape(-1)
        return out

    def proposals(self, count, *, block, step):
        return None

    def uniform(self, count, *, block, step):
        return self.inner.uniform(count, block=block, step=step)

    def sampled(self, ids, *, block, step):
        self.draws[("categorical", block, step)] = np.array(ids).reshape(-1)


class Replayed(Draws):
    def __init__(self, recorded: Recorded):
        self.draws = recorded.draws

    def tokens(self, count, *, block, step):
        return self.draws[("tokens", block, step)].reshape(count)

    def proposals(self, count, *, block, step):
        return self.draws[("categorical", block, step)].reshape(count)

    def uniform(self, count, *, block, step):
        raise AssertionError("recorded proposals are served instead")


def _random_template(rng: random.Random, max_hole: int) -> FillTemplate:
    segments = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.75:
            segments.append(Given(" ".join(rng.choices(WORDS, k=rng.randint(1, 14))) + rng.choice(["", " "])))
        segments.append(Hole(rng.randint(1, max_hole)))
    if rng.random() < 0.6:
        segments.append(Given(" " + " ".join(rng.choices(WORDS, k=rng.randint(1, 10)))))
    return FillTemplate(tuple(segments))


CONFIGS = [
    ("dg", engine.Settings(max_denoising_steps=3)),
    ("dg", engine.Settings(max_denoising_steps=3, diffusion_sampler="confidence-threshold", temp=0.7)),
    ("llada", engine.Settings(max_denoising_steps=4, temp=0.8, top_k=40)),
    ("llada", engine.Settings(max_denoising_steps=4, editing_threshold=0.02, max_post_steps=2)),
]


@pytest.mark.parametrize("family, settings", CONFIGS, ids=["dg-entropy", "dg-confidence", "llada", "llada-edit"])
def test_given_positions_never_change_over_random_hole_layouts(request, family, settings):
    model = request.getfixturevalue(family)
    # Seeded per configuration (str hashes change from run to run); more seeds are one range away.
    rng = random.Random(f"{family}-{sorted(settings.to_dict().items())}")
    for trial in range(6):
        template = _random_template(rng, 32)
        events = list(engine.generate(model, prompt_ids=PROMPT[: rng.randint(3, 9)], fill=template,
                                      settings=settings.replace(seed=trial)))
        finished = events[-1]
        assert isinstance(finished, Finished) and finished.finish_reason == "stop"
        first_frames: dict[int, Step] = {}
        for step in (e for e in events if isinstance(e, Step)):
            first = first_frames.setdefault(step.block, step)
            fixed = step.fixed
            assert fixed is not None and fixed.shape == step.canvas.shape
            assert np.array_equal(fixed, first.fixed)
            assert np.array_equal(step.canvas[fixed], first.canvas[fixed])  # never changes, at any step
            assert step.accepted[fixed].all()
            if step.edited is not None:
                assert not step.edited[fixed].any()
        holes = sum(int((~s.fixed)[s.prompt_positions:].sum()) for s in first_frames.values())
        assert holes == sum(s.length for s in template.segments if isinstance(s, Hole))
        # The answer is the given text verbatim with the fillings in between.
        spans = finished.filled_spans
        assert len(spans) == template.holes
        assert all(a <= b <= c for (a, b), (c, _) in zip(spans, spans[1:] + ((len(finished.content), 0),)))
        given, position = [], 0
        for start, end in spans:
            given.append(finished.content[position:start])
            position = end
        given.append(finished.content[position:])
        assert "".join(given) == "".join(s.text for s in template.segments if isinstance(s, Given))
        assert finished.content == "".join(b.content_delta for b in events if isinstance(b, BlockCommitted)) + \
            finished.content_tail


def test_dg_fill_equals_a_hand_driven_replay_of_recorded_draws(dg):
    template = parse_fill("The ___{5} sat on ___{4} mat, and then ___{20} ran far away ___{3}.")
    settings = engine.Settings(max_denoising_steps=5, seed=3)
    recorded = Recorded(3, dg.network.vocab_size)
    events = list(engine.generate(dg, prompt_ids=PROMPT, settings=settings, fill=template, randomness=recorded))

    net, plan = dg.network, dg_plan(settings, dg.generation_config, dg.network.canvas_length)
    canvas = tokenize(template, dg.tokenizer.encode_text, net.vocab_size, 32)
    lead = canvas.leading_given
    cache = net.prefill(mx.array([PROMPT + canvas.ids[:lead].tolist()], dtype=mx.int32))
    blocks = split_blocks(canvas.hole, lead, 32, 32, divide_holes=False)
    assert len(blocks) >= 2
    steps = plan.max_denoising_steps
    tokens = canvas.ids[:lead].tolist()
    for b, (begin, end) in enumerate(blocks):
        given, fixed = canvas.ids[begin:end], canvas.hole[begin:end] < 0
        holes = ~fixed
        x = np.where(fixed, given, recorded.draws[("tokens", b, -1)])
        self_conditioning, previous = None, None
        for k in range(steps):
            logits = net.denoise(mx.array(x[None].astype(np.int32)), cache, self_conditioning=self_conditioning,
                                 softcap=False)[0]
            analysis = analyse(logits, softcap=net.softcap, probabilities=True,
                               temperature=float(linear_temperature(steps - k, steps, plan.t_min, plan.t_max)))
            argmax, entropy = analysis.argmax, analysis.entropy
            stable = previous is not None and np.array_equal(previous, argmax[holes])
            previous = argmax[holes]
            if (stable and entropy[holes].mean() < plan.confidence_threshold) or k == steps - 1:
                final = np.where(fixed, given, argmax)
                break
            accepted = entropy_bound_mask(np.where(fixed, 0.0, entropy), plan.entropy_bound)
            proposal, noise = recorded.draws[("categorical", b, k)], recorded.draws[("tokens", b, k)]
            x = np.where(fixed, given, np.where(accepted | fixed, proposal, noise))
            self_conditioning = net.self_conditioning_from_probabilities(analysis.probabilities)
        committed = [e for e in events if isinstance(e, BlockCommitted)][b]
        assert list(committed.committed) == final.tolist()
        tokens += [int(t) for t, h in zip(final, holes) if not (h and t in (0, 1, 2, 3, 50, 106))]
        net.commit(mx.array(final[None].astype(np.int32)), cache)
    assert list(events[-1].token_ids) == tokens


def test_llada_fill_equals_a_hand_driven_replay_of_recorded_draws(llada):
    # The prompt's tail shares block 0 with the template; the 30-token hole crosses into block 1 and is divided.
    template = parse_fill("A ___{6} and a ___{30} end.")
    prompt = list(range(40, 80))
    settings = engine.Settings(max_denoising_steps=8, temp=0.9, top_k=50, top_p=0.95, seed=5)
    recorded = Recorded(5, llada.network.vocab_size)
    events = list(engine.generate(llada, prompt_ids=prompt, settings=settings, fill=template, randomness=recorded))

    net, plan = llada.network, llada_plan(settings, llada.generation_config)
    canvas = tokenize(template, llada.tokenizer.encode_text, net.vocab_size, 32)
    lead = canvas.leading_given
    encoder_prompt = prompt + canvas.ids[:lead].tolist()
    whole = len(encoder_prompt) // 32 * 32
    cache = net.prefill(mx.array([encoder_prompt[:whole]], dtype=mx.int32))
    tail = encoder_prompt[whole:]
    blocks = split_blocks(canvas.hole, lead, 32 - len(tail), 32, divide_holes=True)
    assert len(blocks) == 2 and canvas.hole[blocks[0][1] - 1] == canvas.hole[blocks[0][1]] == 1
    quotas, thresholds = transfer_schedule(32, 8), threshold_schedule(plan.diffusion_threshold,
                                                                       plan.diffusion_threshold, 8)
    replay = Replayed(recorded)
    tokens = canvas.ids[:lead].tolist()
    for b, (begin, end) in enumerate(blocks):
        part = canvas.ids[begin:end]
        ids = np.concatenate([np.array(tail, np.int32), np.where(part >= 0, part, net.mask_token_id)])
        ids = np.concatenate([ids, np.full(32 - len(ids), net.eos_token_ids[0], np.int32)]).astype(np.int32)
        masked = np.zeros(32, bool)
        masked[len(tail):len(tail) + end - begin] = canvas.hole[begin:end] >= 0
        step = 0
        while masked.any():
            analysis = propose(net.denoise(mx.array(ids[None]), cache)[0], plan, replay, b, step)
            x0, p = analysis.proposal, analysis.probability
            transfer = select_transfer(np.where(masked, p, -np.inf), quotas[step], thresholds[step])
            ids, masked, step = np.where(transfer, x0, ids).astype(np.int32), masked & ~transfer, step + 1
        committed = [e for e in events if isinstance(e, BlockCommitted)][b]
        assert list(committed.committed) == ids.tolist()
        answer = ids[len(tail):len(tail) + end - begin]
        tokens += [int(t) for t, h in zip(answer, canvas.hole[begin:end]) if not (h >= 0 and t in (491, 492, 495))]
        net.commit(mx.array(ids[None]), cache)
        tail = []
    assert list(events[-1].token_ids) == tokens


def test_fill_refusals_are_one_line(dg, llada):
    messages = [{"role": "user", "content": "Fill it in."}]
    cases = [
        (dg, dict(fill="no hole at all"), "no hole"),
        (dg, dict(fill="a ___{0} b"), "length 0"),
        (dg, dict(fill="a ___{33} b"), r"longer than one block \(32\)"),
        (llada, dict(fill="a ___{40} b"), r"longer than one block \(32\)"),
        (llada, dict(fill="a ___ b", think=True), "thinking"),
        (dg, dict(fill=FillTemplate((Given(ids=(1, 9999)), Hole(2)))), "token ids"),
    ]
    for model, kwargs, message in cases:
        with pytest.raises(InputError, match=message) as error:
            engine.generate(model, messages=messages, **kwargs)  # refused when called, before any event
        assert "\n" not in str(error.value)


def test_a_fill_ignores_max_tokens_and_ends_when_filled(dg):
    events = list(engine.generate(dg, prompt_ids=PROMPT, fill="One ___{3} two ___{2} three.",
                                  settings=engine.Settings(max_tokens=1, max_denoising_steps=2)))
    assert isinstance(events[0], Started) and events[0].prompt_tokens == len(PROMPT)
    finished = events[-1]
    assert finished.finish_reason == "stop" and finished.content.startswith("One ")
    assert finished.content.endswith(" three.") and len(finished.filled_spans) == 2


@pytest.mark.parametrize("family", ["dg", "llada"])
def test_a_revision_reuses_the_cached_prompt_and_only_what_matches_of_the_old_answer(request, family):
    model = request.getfixturevalue(family)
    settings = engine.Settings(max_tokens=40, max_denoising_steps=3)
    messages = [{"role": "user", "content": "Why is the sky blue?"}]
    session = engine.Session()
    answer = list(engine.generate(model, messages=messages, settings=settings, session=session))[-1]
    cached = list(session.ids)
    content = answer.content
    start, end = len(content) // 2, len(content) // 2 + 6
    template = revision_template(content, start, end)
    prompt = model.tokenizer.prepare_chat(messages).ids
    encoder_prompt = prompt + model.tokenizer.encode_text(content[:start])
    common = next((i for i, (a, b) in enumerate(zip(cached, encoder_prompt)) if a != b),
                  min(len(cached), len(encoder_prompt)))
    assert common >= len(prompt) - (len(prompt) % 32 if family == "llada" else 0)  # the prompt is served whole
    reused = list(engine.generate(model, messages=messages, settings=settings, fill=template, session=session))
    fresh = list(engine.generate(model, messages=messages, settings=settings, fill=template))
    kept = min(common, len(encoder_prompt) - 1)
    if family == "llada":
        kept -= kept % 32
    # Exactly the common prefix is served from the cache, nothing of the old answer after it ...
    assert reused[0].encoded_tokens == len(encoder_prompt) - kept
    # ... and the result is the same as without any cache.
    assert reused[-1].token_ids == fresh[-1].token_ids and reused[-1].content == fresh[-1].content
    revised = reused[-1]
    (a, b), = revised.filled_spans
    assert revised.content[:a] == content[:start] and revised.content[b:] == content[end:]
