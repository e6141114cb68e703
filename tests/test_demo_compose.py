"""Composed small talk for training (scripts/demo/chat_compose.py): split by template, the hand-written panel
never seen in training, every out-of-scope kind answered with the about line, and real surface variety."""

from __future__ import annotations

import random

import pytest

from scripts.demo import chat_compose as compose
from scripts.demo.panel_prompts import PANEL
from scripts.demo.tasks_chat import chat_answer


@pytest.fixture(scope="module")
def drawn():
    rng = random.Random(7)
    return {split: [compose.example(rng, split, "llada2_moe") for _ in range(3000)] for split in ("train", "heldout")}


def test_templates_fall_on_one_side_only(drawn):
    for split, other in (("train", "heldout"), ("heldout", "train")):
        own = {b for i in compose.BODIES for b in compose.bodies(i, split)} | \
            {p for _, p in compose.out_of_scope_patterns(split)}
        for example in drawn[split]:
            assert example.template in own, example
        assert not own & ({b for i in compose.BODIES for b in compose.bodies(i, other)}
                          | {p for _, p in compose.out_of_scope_patterns(other)})


def test_the_hand_written_panel_is_never_a_training_prompt_or_template(drawn):
    train_templates = {compose.normal_form(e.template) for e in drawn["train"]}
    assert not train_templates & compose.PANEL_FORMS
    assert not {compose.normal_form(e.messages[0]["content"]) for e in drawn["train"]} & compose.PANEL_FORMS
    # Held out by the guard even where the hash would have put them in training: "thx a ton", "knock knock", ...
    assert compose.normal_form("much obliged") in {compose.normal_form(b) for b in compose.bodies("thanks", "heldout")}
    assert ("creative", "knock knock") in compose.out_of_scope_patterns("heldout")
    assert len(PANEL["out_of_scope"]) == 20 and all(len(PANEL[i]) == 10 for i in compose.BODIES)


def test_answers_are_the_fixed_lines_and_out_of_scope_gets_the_about_line(drawn):
    about, thanks = chat_answer("identity", "llada2_moe"), chat_answer("thanks", "llada2_moe")
    by_intent = {}
    for example in drawn["train"]:
        by_intent.setdefault(example.subtask, set()).add(example.answer)
    assert by_intent["thanks"] == {thanks} and by_intent["out_of_scope"] == {about}
    assert all(by_intent[i] == {about} for i in ("greeting", "identity", "capabilities"))
    counts = {i: sum(e.subtask == i for e in drawn["train"]) for i in by_intent}
    assert counts["thanks"] == max(counts.values())   # thanks first: the weakest intent of both demos


def test_prompts_vary_in_case_noise_kind_and_length(drawn):
    prompts = [e.messages[0]["content"] for e in drawn["train"]]
    assert sum(p.isupper() for p in prompts) > 100          # ALL CAPS
    assert sum(p[:1].islower() for p in prompts) > 500      # as typed
    assert any("🙂" in p or "😊" in p or "👍" in p for p in prompts)
    assert sum(". " in p or "! " in p for p in prompts) > 200   # two sentences
    kinds = {kind for kind, pattern in compose.out_of_scope_patterns("train")
             for e in drawn["train"] if e.template == pattern}
    assert kinds == set(compose.OUT_OF_SCOPE)
    assert len(set(prompts)) > 0.6 * len(prompts)


def test_the_reasoning_follows_the_answer_one_line_per_answer():
    """With a line per intent the DiffusionGemma demo blended them ("The user asks feting ee.") and garbled the
    answer after them: prompts that get the same answer must get the same reasoning, and only those."""
    rng = random.Random(3)
    pairs = {(e.answer, e.reasoning) for e in (compose.example(rng, "train", "diffusion_gemma", think=True)
                                               for _ in range(2000))}
    answers = {answer for answer, _ in pairs}
    assert len(answers) == 2 and len(pairs) == len(answers)
    assert len({reasoning for _, reasoning in pairs}) == 2


def test_held_letters_and_dropped_apostrophes_appear_in_the_noise():
    rng = random.Random(5)
    noised = [compose.noised(rng, "what's up") for _ in range(3000)]
    assert any(n.lower() == "whats up" for n in noised) and any(n.lower() == "what's up" for n in noised)
    stretched = compose._stretch(random.Random(0), "hey")
    assert stretched.startswith("hey") and set(stretched[3:]) == {"y"}
