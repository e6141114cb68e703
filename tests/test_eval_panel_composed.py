"""bench/eval_panel.composed_panel: the held-out-template panel that `eval_demo.py --panel --composed N` asks."""

from __future__ import annotations

from bench.eval_panel import composed_panel
from scripts.demo import chat_compose
from scripts.demo.panel_prompts import PANEL


def test_n_prompts_for_every_intent_of_the_panel_drawn_by_seed():
    panel = composed_panel(6, seed=3)
    # The same intents as the hand-written panel, so each prompt is scored against the same fixed answer.
    assert set(panel) == set(PANEL)
    assert all(len(prompts) == 6 and all(p.strip() for p in prompts) for prompts in panel.values())
    assert composed_panel(6, seed=3) == panel
    assert composed_panel(6, seed=4) != panel


def test_no_prompt_is_built_from_a_training_body():
    train = {chat_compose.normal_form(b) for intent in chat_compose.BODIES for b in chat_compose.bodies(intent, "train")}
    held = {chat_compose.normal_form(b) for intent in chat_compose.BODIES
            for b in chat_compose.bodies(intent, "heldout")}
    for intent, prompts in composed_panel(20, seed=0).items():
        if intent == "out_of_scope":
            continue
        for prompt in prompts:
            form = chat_compose.normal_form(prompt)
            # A typo may hide the body; an untouched training body must never be the whole prompt.
            assert form not in train - held, prompt


def test_eval_demo_names_the_panel_set_and_refuses_an_unknown_one(capsys):
    import pytest

    from bench.eval_demo import main

    with pytest.raises(SystemExit) as refused:
        main(["--model", "tui/demo/llada2-demo", "--panel", "0"])
    assert refused.value.code == 2 and "invalid choice: '0'" in capsys.readouterr().err


def test_eval_demo_settings_on_top_of_the_defaults_are_typed_and_checked(capsys):
    import pytest

    from bench.eval_demo import main, settings_from
    from bench.eval_panel import configurations

    assert settings_from(["max_denoising_steps=5", "t-min=0.4"]) == {"max_denoising_steps": 5, "t_min": 0.4}
    configs = configurations("diffusion_gemma", grid=True, base={"max_denoising_steps": 5})
    assert len(configs) == 20 and all(s.max_denoising_steps == 5 for s, _ in configs)
    assert {(s.temp, s.seed) for s, _ in configs[2:]} == {(t, seed) for t in (0.0, 0.5, 1.0) for seed in (1, 2, 3)}
    thinking_on = configurations("diffusion_gemma", grid=True, thinking="on")
    assert len(thinking_on) == 10 and all(think for _, think in thinking_on)
    assert [think for _, think in configurations("llada2_moe", grid=False, thinking="on")] == [False]
    for bad in (["steps"], ["no_such=1"], ["max_denoising_steps=abc"], ["t_min=2", "t_max=1"]):
        with pytest.raises(SystemExit):
            main(["--model", "tui/demo/llada2-demo", "--panel", *[a for pair in bad for a in ("--setting", pair)]])
        error = capsys.readouterr().err
        assert "error:" in error and ("setting" in error or "t_min" in error), error


def test_a_reasoning_that_is_none_of_the_lines_is_counted_apart_from_the_other_line(monkeypatch):
    import types

    import engine
    from bench import eval_panel
    from scripts.demo.tasks_chat import ABOUT_REASONING, REASONING, chat_answer

    family = "diffusion_gemma"
    thought = {"hi": ABOUT_REASONING, "thanks a lot": "I will tell thanuser what I am and what I can do.",
               "cheers": ABOUT_REASONING, "who are you": REASONING["thanks"]}

    def answer(model, prompt, settings, think):
        intent = "thanks" if prompt in ("thanks a lot", "cheers") else "identity"
        return {"content": chat_answer(intent, family), "reasoning": thought[prompt], "steps": [3], "first": [0.1],
                "blocks": [(3, 32, 32)], "seconds": 0.5}

    monkeypatch.setattr(eval_panel, "answer_once", answer)
    panel = {"greeting": ("hi",), "thanks": ("thanks a lot", "cheers"), "identity": ("who are you",)}
    row = eval_panel.run_configuration(types.SimpleNamespace(family=family), engine.Settings(), True, panel)
    assert row["garbled"] == 0 and row["accuracy"] == {"greeting": 1.0, "thanks": 1.0, "identity": 1.0}
    assert row["reasoning_wrong_intent"] == 3      # the garbled one and the two that name the other line
    assert row["reasoning_garbled"] == 1
    assert row["reasoning_garbled_examples"] == [{"prompt": "thanks a lot", "got": thought["thanks a lot"]}]
    assert "reasoning_garbled" not in eval_panel.run_configuration(
        types.SimpleNamespace(family=family), engine.Settings(), False, panel)
