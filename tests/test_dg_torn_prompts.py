"""bench/dg_torn_prompts.py: garbled answers of the DiffusionGemma demo over the prompts it is torn over."""

from __future__ import annotations

import json

import pytest

from bench import dg_torn_prompts


def test_the_former_defaults_garble_what_the_bundled_ones_answer(capsys, monkeypatch):
    monkeypatch.setattr(dg_torn_prompts, "TORN", (("asdfghjkl qwerty zxcv", False),))   # garbled at seed 1
    assert dg_torn_prompts.main(["--seeds", "1", "--setting", "max_denoising_steps=6", "--setting", "t_min=0.16",
                                 "--setting", "entropy_bound=0.1"]) == 0
    former = json.loads(capsys.readouterr().out)
    assert former["settings"] == {"max_denoising_steps": 6, "t_min": 0.16, "entropy_bound": 0.1}
    assert (former["garbled"], former["of"]) == (1, 1)
    assert dg_torn_prompts.main(["--seeds", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["garbled"] == 0


def test_bad_settings_and_the_wrong_family_are_one_line_errors(capsys):
    for argv in (["--setting", "t_min=2", "--setting", "t_max=1"], ["--setting", "nope=1"], ["--seeds", "0"],
                 ["--model", "tui/demo/llada2-demo"]):
        with pytest.raises(SystemExit) as refused:
            dg_torn_prompts.main(argv)
        assert refused.value.code == 2
        assert "error:" in capsys.readouterr().err


def test_thoughts_mode_counts_a_garbled_thought_apart_from_the_answer(capsys, monkeypatch):
    # At the demo's defaults, seed 1, this prompt's thought comes out garbled ("Iheill tell the user what I am")
    # while its answer is whole: a garbled thought, no garbled answer.
    monkeypatch.setattr(dg_torn_prompts, "TORN_THOUGHTS", (("Translate 'thank you' into Spanish.", True),))
    assert dg_torn_prompts.main(["--seeds", "1", "--thoughts"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["prompts"], row["garbled_thoughts"], row["garbled"], row["of"]) == ("thoughts", 1, 0, 1)
    monkeypatch.setattr(dg_torn_prompts, "TORN", (("hello", False),))
    assert dg_torn_prompts.main(["--seeds", "1"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["prompts"], row["garbled_thoughts"], row["garbled"]) == ("answers", 0, 0)
