"""scripts/demo/compare_evals.py: the rule every training pass has kept to bundle a demo (level or ahead on every
intent of every set and setting, no more garbled answers), applied to bench/eval_demo.py outputs."""

from __future__ import annotations

import json

import pytest

from scripts.demo import compare_evals


def evaluation(thanks: float, garbled: int, think: bool | None = None) -> dict:
    accuracy = {"greeting": 1.0, "identity": 1.0, "capabilities": 1.0, "thanks": thanks, "out_of_scope": 0.95}
    settings = [False] if think is None else [False, think]
    return {"configurations": [{"think": t, "temp": None, "seed": None, "accuracy": accuracy, "garbled": garbled}
                               for t in settings]}


def test_level_or_ahead_everywhere_with_no_more_garbled_beats():
    rows, behind = compare_evals.compare({"panel1": evaluation(0.8, 1)}, {"panel1": evaluation(0.9, 1)})
    assert behind == []
    assert rows == ["| panel1, thinking off | 100 % / 100 % | 100 % / 100 % | 100 % / 100 % | 80 % / 90 % "
                    "| 95 % / 95 % | 1 / 1 |"]


def test_one_intent_lower_on_one_set_or_more_garbled_in_all_does_not():
    bundled = {"panel1": evaluation(0.8, 0), "panel2": evaluation(0.9, 0)}
    _, behind = compare_evals.compare(bundled, {"panel1": evaluation(1.0, 0), "panel2": evaluation(0.8, 0)})
    assert behind == ["panel2, thinking off: thanks 90 % -> 80 %"]
    _, behind = compare_evals.compare(bundled, {"panel1": evaluation(0.8, 1), "panel2": evaluation(0.9, 0)})
    assert behind == ["garbled answers 0 -> 1"]


def test_settings_are_matched_by_thinking_and_sets_only_where_both_have_them():
    bundled = {"panel1": evaluation(0.9, 0, think=True), "composed7": evaluation(1.0, 0)}
    rows, behind = compare_evals.compare(bundled, {"panel1": evaluation(0.9, 0, think=True)})
    assert [row.split(" |")[0] for row in rows] == ["| panel1, thinking off", "| panel1, thinking on"]
    assert behind == []


def test_the_command_prints_the_table_and_the_verdict(tmp_path, capsys):
    for folder, thanks in (("bundled", 0.8), ("candidate", 0.7)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "panel1.json").write_text(json.dumps(evaluation(thanks, 0)))
    assert compare_evals.main([str(tmp_path / "bundled"), str(tmp_path / "candidate")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| set, setting")
    assert out[-1] == "beats the bundled demo: no; behind on panel1, thinking off: thanks 80 % -> 70 %"
    (tmp_path / "empty").mkdir()
    assert compare_evals.main([str(tmp_path / "bundled"), str(tmp_path / "empty")]) == 2


def test_a_file_that_is_not_an_evaluation_is_one_line_not_a_traceback(tmp_path):
    (tmp_path / "panel1.json").write_text("")   # an evaluation cut short
    with pytest.raises(SystemExit) as stop:
        compare_evals.load_folder(tmp_path)
    assert str(stop.value) == f"{tmp_path / 'panel1.json'}: not a bench/eval_demo.py --panel result (JSONDecodeError)"
    (tmp_path / "panel1.json").write_text('{"model": "x"}')
    with pytest.raises(SystemExit, match="not a bench/eval_demo.py --panel result"):
        compare_evals.load_folder(tmp_path)
