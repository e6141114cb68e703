"""The bundled demos still do what their cards say: the card claims exactly the tasks its own evaluation put at
the bar, a held-out sample of each claimed task and of small talk (the task both demos were trained on last)
still scores as measured, and the example prompts the empty chat offers still get their recorded answers. Could
fail on any engine change that alters what a trained model says (EOS placement, the stop rule, the chat template,
the quantized path).

The full measurement is `python bench/eval_demo.py --model tui/demo/NAME --n 50` (see each model card)."""

from __future__ import annotations

import json

import pytest

import engine
from bench.eval_demo import evaluate
from tui.demo_models import DEMO_NAMES, DEMO_ROOT

SAMPLE = 8          # held-out prompts per task: the first ones of the card's own evaluation (seed 0)
BAR = 0.9           # what a card needs to claim a task (scripts/demo/bundle.py)
MARGIN = 0.25       # a sample of 8 may differ from the 50-prompt measurement by this much


@pytest.fixture(scope="module", params=DEMO_NAMES)
def demo(request):
    folder = DEMO_ROOT / request.param
    card = json.loads((folder / "demo.json").read_text())
    measured = json.loads((folder / "eval.json").read_text())
    return engine.load(str(folder)), card, measured


def test_the_card_claims_exactly_what_its_evaluation_measured(demo):
    _, card, measured = demo
    at_bar = [task for task, row in measured.items() if " " not in task and row["accuracy"] >= BAR]
    assert card["tasks"] == at_bar
    if not at_bar:   # the picker says how well its best task does
        chat = measured["chat"]["accuracy"]
        assert f"{chat:.0%} right on held-out prompts" in card["summary"] and "below its 90% bar" in card["summary"]


def test_claimed_tasks_and_small_talk_score_as_measured_on_a_held_out_sample(demo):
    model, card, measured = demo
    tasks = tuple(dict.fromkeys([*card["tasks"], "chat"]))
    rows = evaluate(model, SAMPLE, seed=0, tasks=tasks)
    for task in tasks:
        assert abs(rows[task]["accuracy"] - measured[task]["accuracy"]) <= MARGIN, (task, rows[task]["failures"])


def test_the_example_prompts_get_their_recorded_answers(demo):
    model, card, _ = demo
    assert 1 <= len(card["examples"]) == len(card["example_answers"]) <= 3
    for prompt, answer in zip(card["examples"], card["example_answers"]):
        finished = list(engine.generate(model, messages=[{"role": "user", "content": prompt}]))[-1]
        assert finished.content.strip() == answer, prompt
