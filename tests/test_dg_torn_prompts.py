"""bench/dg_torn_prompts.py: garbled answers of the DiffusionGemma demo over the prompts it is torn over."""

from __future__ import annotations

import dataclasses
import json

import pytest

from bench import dg_torn_prompts


def test_the_settings_reach_the_engine_and_change_which_answers_garble(capsys, monkeypatch):
    # The demo bundled in the twenty-third pass tears over this panel-11 prompt: at seed 1 its defaults garble the
    # answer and the former defaults do not; at seed 3 the other way round (the demo bundled before it garbled
    # "asdfghjkl qwerty zxcv" under the former defaults at seed 1 and nothing under its own).
    monkeypatch.setattr(dg_torn_prompts, "TORN", (("blorptastic fizzwump", False),))
    former = ["--setting", "max_denoising_steps=6", "--setting", "t_min=0.16", "--setting", "entropy_bound=0.1"]
    assert dg_torn_prompts.main(["--seeds", "1", *former]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["settings"] == {"max_denoising_steps": 6, "t_min": 0.16, "entropy_bound": 0.1}
    assert (row["garbled"], row["of"]) == (0, 1)
    assert dg_torn_prompts.main(["--seeds", "1"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["settings"], row["garbled"], row["of"]) == ({}, 1, 1)
    assert dg_torn_prompts.main(["--seeds", "3", *former]) == 0
    assert json.loads(capsys.readouterr().out)["garbled"] == 1


def test_bad_settings_and_the_wrong_family_are_one_line_errors(capsys):
    for argv in (["--setting", "t_min=2", "--setting", "t_max=1"], ["--setting", "nope=1"], ["--seeds", "0"],
                 ["--model", "tui/demo/llada2-demo"]):
        with pytest.raises(SystemExit) as refused:
            dg_torn_prompts.main(argv)
        assert refused.value.code == 2
        assert "error:" in capsys.readouterr().err


def test_thoughts_mode_counts_a_garbled_thought_apart_from_the_answer(capsys, monkeypatch):
    # The demo bundled before the twenty-third pass wrote this prompt's thought garbled at its defaults, seed 1
    # ("Iheill tell the user what I am"), with its answer whole; the one bundled now garbles no thought of the
    # list at seeds 1-3, defaults or former. So the thought is garbled here by hand, the answer left as generated.
    real = dg_torn_prompts.engine.generate

    def torn_thought(*args, **kwargs):
        *events, finished = list(real(*args, **kwargs))
        return [*events, dataclasses.replace(finished, reasoning="Iheill tell the user what I am.")]

    monkeypatch.setattr(dg_torn_prompts.engine, "generate", torn_thought)
    monkeypatch.setattr(dg_torn_prompts, "TORN_THOUGHTS", (("Translate 'thank you' into Spanish.", True),))
    assert dg_torn_prompts.main(["--seeds", "1", "--thoughts"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["prompts"], row["garbled_thoughts"], row["garbled"], row["of"]) == ("thoughts", 1, 0, 1)
    monkeypatch.setattr(dg_torn_prompts, "TORN", (("hello", False),))
    assert dg_torn_prompts.main(["--seeds", "1"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["prompts"], row["garbled_thoughts"], row["garbled"]) == ("answers", 0, 0)
