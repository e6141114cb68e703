"""scripts/demo/panel_overlap.py: which panel prompts training has, as the guard compares them."""

from __future__ import annotations

import json

from scripts.demo import chat_compose, panel_overlap
from scripts.demo.panel_prompts import (PANEL, PANEL_2, PANEL_3, PANEL_4, PANEL_5, PANEL_6, PANEL_7, PANEL_8, PANEL_9,
                                        PANEL_10, PANEL_11, PANEL_12, PANEL_13, PANEL_14, PANEL_15,
                                        PANELS)


def test_a_fixed_phrasing_is_found_in_any_spelling_and_a_new_one_is_not():
    forms = panel_overlap.training_forms(n=200)
    panel = {"thanks": ("THX!!", "zq never typed by anyone"), "out_of_scope": ()}
    result = panel_overlap.overlap(panel, forms)
    assert [hit["prompt"] for hit in result["seen"]["thanks"]] == ["THX!!"]
    assert "phrasing" in result["seen"]["thanks"][0]["in"]
    assert (result["seen_count"], result["n"]) == (1, 2)


def test_composed_prompts_count_as_seen():
    forms = panel_overlap.training_forms(n=300, seed=5)
    drawn = sorted(forms["composed"])[:3]
    assert panel_overlap.overlap({"greeting": tuple(drawn)}, {"composed": forms["composed"]})["seen_count"] == 3


def test_the_guarded_panels_are_not_composed_and_the_outsiders_panel_is_not_guarded(capsys):
    forms = panel_overlap.training_forms(n=2000)
    assert panel_overlap.overlap(PANEL_2, forms)["seen_count"] == 0
    # The first panel's only overlaps are fixed phrasings typed in capitals or with other punctuation.
    seen = panel_overlap.overlap(PANEL, forms)["seen"]
    assert sorted(h["prompt"] for hits in seen.values() for h in hits) == [
        "HELLO?", "THANK YOU", "WHAT CAN YOU DO", "WHO ARE YOU", "hi!! 👋"]
    assert all(h["in"] == ["phrasing"] for hits in seen.values() for h in hits)
    # The third panel is an outsider's: everyday phrases in it stay in training ("thx", "cheers").
    assert chat_compose.normal_form("thx") not in chat_compose.PANEL_FORMS
    assert {"thx", "cheers"} <= set(PANEL_3["thanks"])
    # The outsiders' panels: the same shape, and none guarded.
    for outsiders in (PANEL_3, PANEL_4, PANEL_5, PANEL_6, PANEL_7, PANEL_8, PANEL_9, PANEL_10, PANEL_11,
                      PANEL_12, PANEL_13, PANEL_14, PANEL_15):
        assert len(outsiders["out_of_scope"]) == 20 and all(len(outsiders[i]) == 10 for i in chat_compose.BODIES)
    assert chat_compose.normal_form("lifesaver 😭") not in chat_compose.PANEL_FORMS
    assert chat_compose.normal_form("ta, that's brilliant") not in chat_compose.PANEL_FORMS
    assert tuple(PANELS) == ("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15")
    assert panel_overlap.main(["--panel", "3", "--n", "100"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["panel"] == "3" and printed["n"] == 60 and 0 < printed["seen_count"] < 60
