"""Composed small talk for training (scripts/demo/chat_compose.py): split by template, the hand-written panel
never seen in training, every out-of-scope kind answered with the about line, and real surface variety."""

from __future__ import annotations

import random

import pytest

from scripts.demo import chat_compose as compose
from scripts.demo import chat_out_of_scope
from scripts.demo.panel_prompts import PANEL, PANEL_2
from scripts.demo.tasks_chat import chat_answer


@pytest.fixture(scope="module")
def drawn():
    rng = random.Random(7)
    return {split: [compose.example(rng, split, "llada2_moe") for _ in range(3000)] for split in ("train", "heldout")}


def test_templates_fall_on_one_side_only(drawn):
    for split, other in (("train", "heldout"), ("heldout", "train")):
        own = {b for i in compose.BODIES for b in compose.bodies(i, split)} | \
            {p for _, p in compose.out_of_scope_patterns(split)}
        if split == "train":   # phrases built from parts are training only
            own |= {compose.compound_template(i) for i in compose.BODIES}
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
    assert len(PANEL_2["out_of_scope"]) == 20 and all(len(PANEL_2[i]) == 10 for i in compose.BODIES)
    assert {compose.normal_form(p) for prompts in PANEL_2.values() for p in prompts} <= compose.PANEL_FORMS


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
    # Emoji from a wide set, on every intent: the byte-fallback tokenizers see each as four byte tokens.
    seen = {e for e in compose.EMOJI for p in prompts if e in p}
    assert len(seen) > 0.8 * len(compose.EMOJI)
    assert {ex.subtask for ex in drawn["train"] if any(e in ex.messages[0]["content"] for e in compose.EMOJI)} \
        == set(compose.TRAIN_WEIGHTS)
    assert sum(". " in p or "! " in p for p in prompts) > 200   # two sentences
    kinds = {kind for kind, pattern in compose.out_of_scope_patterns("train")
             for e in drawn["train"] if e.template == pattern}
    assert kinds == set(chat_out_of_scope.OUT_OF_SCOPE)
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


def test_phrases_built_from_parts_are_training_only_and_never_a_held_out_body_or_panel_prompt(drawn):
    built = [e for e in drawn["train"] if e.template.startswith("<compound")]
    assert 0.3 * len(drawn["train"]) < len(built) < 0.5 * len(drawn["train"])
    assert {e.subtask for e in built} == set(compose.BODIES)
    assert not any(e.template.startswith("<compound") for e in drawn["heldout"])
    held_out = {compose.normal_form(b) for i in compose.BODIES for b in compose.bodies(i, "heldout")}
    rng = random.Random(11)
    phrases = {compose._compound(rng, intent) for intent in compose.BODIES for _ in range(2000)}
    assert not {compose.normal_form(p) for p in phrases} & (held_out | compose.PANEL_FORMS)
    # Thanks without the word "thank", and thanks with a sentence of praise around them.
    thanks = {compose._compound(rng, "thanks") for _ in range(2000)}
    assert any("thank" not in p and "obliged" in p for p in thanks)
    assert sum(". " in p or "! " in p for p in thanks) > 300
    assert len(thanks) > 1500


def test_every_noise_slot_of_a_pattern_gets_its_own_keys():
    rng = random.Random(2)
    words = [chat_out_of_scope.fill(rng, "{noise} {noise} {noise}").split() for _ in range(200)]
    assert sum(len(set(w)) == 3 for w in words) > 190   # they were all the same run ("gjwoj gjwoj gjwoj")


def test_every_out_of_scope_kind_keeps_several_training_patterns():
    """Held-out patterns must be new sentences of a kind training knows: the jokes of the first panel were all on
    the held-out side ("tell me a joke", "knock knock") and read as thanks."""
    train = compose.out_of_scope_patterns("train")
    for kind in chat_out_of_scope.OUT_OF_SCOPE:
        assert sum(k == kind for k, _ in train) >= 3, kind


def test_keyboard_walks_are_runs_of_neighbouring_keys():
    rng = random.Random(4)
    walks = [chat_out_of_scope.keyboard_walk(rng) for _ in range(500)]
    for walk in walks:
        assert len(walk) >= 3
        assert any(walk in row or walk in row[::-1] for row in chat_out_of_scope.KEYBOARD_ROWS), walk
    assert len(set(walks)) > 60
    assert any(w in "poiuytrewq" and w not in "qwertyuiop" for w in walks)   # right to left too


def test_thanks_are_also_praise_alone_and_thanks_for_what_other_prompts_ask():
    rng = random.Random(9)
    thanks = [compose._compound(rng, "thanks") for _ in range(3000)]
    praise_alone = [t for t in thanks if any(t.endswith(p) and len(t) <= len(p) + 12 for p in compose.chat_compounds.PRAISE)
                    and not any(core in t for core in ("thank", "thx", "ty", "cheers", "appreciat"))]
    assert len(praise_alone) > 200
    assert any("for the joke" in t for t in thanks) and any("for the translation" in t for t in thanks)


def test_mashing_includes_held_keys_key_pairs_symbols_emoji_and_caps_lock():
    """The fourth panel's `jjjjjjjj kdkdk ;;;` was garbled, and held keys ("ffffff ttttttttttt") read as thanks:
    training had random letters and keyboard walks only, none of them longer than 10 keys."""
    rng = random.Random(6)
    held = [chat_out_of_scope.held_key(rng) for _ in range(300)]
    assert all(len(set(h)) == 1 and 3 <= len(h) <= 40 for h in held)
    assert sum(len(h) > 20 for h in held) > 50   # past 18 keys the demos wrote a letter of the line wrong
    pairs = [chat_out_of_scope.alternating_keys(rng) for _ in range(300)]
    assert all(len(set(p)) == 2 and all(a != b for a, b in zip(p, p[1:])) and p[::2] == p[0] * len(p[::2])
               for p in pairs)
    assert not set("🙏👍❤") & set(chat_out_of_scope.EMOJI)   # those may mean thanks
    for pattern in ("{symbols}", "{symbols} {noise}", "{held} {symbols}"):   # a brace in a run broke format()
        for _ in range(200):
            assert "{" not in chat_out_of_scope.fill(rng, pattern)
    drawn = [compose.compose_out_of_scope(random.Random(seed), "train")[1] for seed in range(3000)]
    gibberish = [p for p in drawn if any(len(set(w)) == 1 and len(w) >= 3 and w.isalpha() for w in p.split())]
    assert len(gibberish) > 30
    assert any(p.isupper() and len(p) >= 3 and p.replace(" ", "").isalpha() for p in gibberish)
    assert any(set(p) & set(chat_out_of_scope.EMOJI) for p in drawn)


def test_made_up_words_can_be_said_aloud_and_get_the_about_line():
    """Panels 12 and 13's `blorptastic zibber flonk` and `flibberwocket znarf` got the thanks line from the LLaDA-2
    demo: training's gibberish was random letters and keys, nothing that reads like a word of another language."""
    rng = random.Random(4)
    words = [chat_out_of_scope.made_up_word(rng) for _ in range(500)]
    assert all(w.isalpha() and w.islower() and set(w) & set("aeiouy") for w in words)
    assert len(set(words)) > 400 and sum(len(w) <= 6 for w in words) > 100
    made_up = {p for kind, p in compose.out_of_scope_patterns("train") if kind == "made_up"}
    assert len(made_up) >= 8
    drawn = [compose.example(random.Random(seed), "train", "llada2_moe") for seed in range(4000)]
    about = chat_answer("identity", "llada2_moe")
    assert any(e.template in made_up for e in drawn)
    assert all(e.answer == about for e in drawn if e.template in made_up)
