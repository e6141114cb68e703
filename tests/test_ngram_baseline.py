"""The n-gram baseline (scripts/demo/ngram_baseline.py): stable features, a fit that learns a word it is shown,
and a report per prompt set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from scripts.demo import ngram_baseline
from scripts.demo.ngram_baseline import fit, ngram_vector, score


def test_features_are_unit_length_case_blind_and_the_same_in_every_process():
    vector = ngram_vector("Thanks!")
    assert torch.isclose(vector.norm(), torch.tensor(1.0))
    assert torch.equal(vector, ngram_vector("THANKS!"))
    assert not torch.equal(vector, ngram_vector("hello"))
    # CRC-32, not Python's salted hash(): another process with another hash seed puts the n-grams in the same buckets
    code = ("from scripts.demo.ngram_baseline import ngram_vector; "
            "print(ngram_vector('Thanks!').nonzero().flatten().tolist())")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "12345"}, cwd=Path(__file__).parent.parent)
    assert json.loads(other.stdout) == vector.nonzero().flatten().tolist()


def test_the_fit_learns_the_word_that_marks_thanks_and_scores_each_intent():
    asked = {"thanks": ("thanks a lot", "many thanks", "thanks mate", "ok thanks"),
             "greeting": ("hello a lot", "many hellos", "hello mate", "ok hello")}
    rows = [ngram_vector(prompt) for prompts in asked.values() for prompt in prompts]
    labels = torch.tensor([1.0] * 4 + [0.0] * 4)
    weights, bias = fit(torch.stack(rows), labels)
    result = score(weights, bias, {"thanks": ("thanks pal",), "greeting": ("hello pal",)})
    assert result == {"accuracy": {"thanks": 1.0, "greeting": 1.0}, "missed": []}
    # an untrained line calls nothing thanks: the thanks prompt is missed, the greeting is right
    wrong = score(torch.zeros_like(weights), torch.tensor([-1.0]), {"thanks": ("thanks pal",), "greeting": ("hi",)})
    assert wrong == {"accuracy": {"thanks": 0.0, "greeting": 1.0},
                     "missed": [{"intent": "thanks", "prompt": "thanks pal"}]}


def test_main_reports_every_prompt_set(capsys):
    assert ngram_baseline.main(["--n", "3", "--seed", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fitted_on"] == {"n": 3, "seed": 1}
    assert {"train (another seed)", "held-out templates", "panel 1", "panel 4"} <= set(report)
    assert set(report["panel 1"]["accuracy"]) == {"greeting", "identity", "capabilities", "thanks", "out_of_scope"}
