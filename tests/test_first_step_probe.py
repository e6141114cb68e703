"""The first-step probe (scripts/demo/first_step_probe.py): it scores the two fixed lines on the first answer block
only, picks the one the model favours, and on the bundled LLaDA-2 demo it predicts the line the app then writes,
including the prompts the demo gets wrong."""

from __future__ import annotations

import pytest
import torch

import engine
from scripts.demo.first_step_probe import answer_lines, choose_line, first_block_end, line_scores, load_model
from scripts.demo.tasks_chat import chat_answer
from scripts.demo.tokenizers import load_tokenizer
from tui.demo_models import DEMO_ROOT

LLADA = DEMO_ROOT / "llada2-demo"


def test_the_first_block_is_the_one_holding_the_prompts_tail():
    assert first_block_end(0, 32) == 32
    assert first_block_end(31, 32) == 32
    assert first_block_end(32, 32) == 64
    assert first_block_end(45, 32) == 64


def test_lines_are_scored_on_the_answer_positions_then_the_fill():
    logits = torch.full((6, 5), -10.0)
    logits[2, 3] = logits[3, 1] = logits[4, 0] = logits[5, 0] = 10.0   # prompt of 2, then 3 1 <fill=0> <fill=0>
    favoured, other = line_scores(logits, 2, [[3, 1], [3, 2]], fill=0)
    assert favoured > other
    # a line longer than the block is cut to it: its tail beyond the block is not scored
    assert line_scores(logits, 2, [[3, 1, 0, 0, 4, 4]], fill=0)[0] == favoured


def test_the_line_the_model_favours_is_chosen():
    class Favours:
        """Logits that put every answer position on line 1's ids (then the fill)."""

        def __call__(self, ids, positions, mask):
            assert mask.shape[-1] == ids.shape[1] == 32   # one block-causal pass over prompt + masked block
            logits = torch.zeros((1, ids.shape[1], 8))
            for offset, token in enumerate([5, 6, 7] + [1] * 32):
                if 20 + offset < ids.shape[1]:
                    logits[0, 20 + offset, token] = 5.0
            return logits

    prompt = [2] * 20
    assert choose_line(Favours(), prompt, [[5, 5, 5], [5, 6, 7]], mask_id=4, eos=1) == 1
    assert choose_line(Favours(), prompt, [[5, 6, 7], [6, 6, 6]], mask_id=4, eos=1) == 0


def test_on_the_bundled_demo_it_predicts_the_line_the_app_writes():
    model, tokenizer = load_model(LLADA), load_tokenizer(LLADA, "llada2_moe")
    app_model = engine.load(str(LLADA))
    lines = [chat_answer("thanks", "llada2_moe"), chat_answer("identity", "llada2_moe")]
    line_ids = answer_lines(tokenizer)   # spelt as the demo writes them, not in the word pieces it reads
    mask_id, eos = tokenizer.id_of("<|mask|>"), tokenizer.id_of("<|endoftext|>")
    # thanks it answers right, thanks the panel's demos took for the about line (bench/README.md), two about asks
    prompts = ("Many thanks!", "thx a ton 🙏", "much obliged", "Thanks! That's exactly what I needed.",
               "Morning!", "Tell me a joke.")
    written = set()
    for prompt in prompts:
        ids = tokenizer.encode_chat([{"role": "user", "content": prompt}], think=False)
        predicted = lines[choose_line(model, ids, line_ids, mask_id, eos)]
        answer = list(engine.generate(app_model, messages=[{"role": "user", "content": prompt}]))[-1].content.strip()
        assert answer == predicted, prompt
        written.add(answer)
    assert written == set(lines)   # both lines occur, so agreeing is not agreeing on one constant


def test_the_probe_asks_either_hand_written_panel(capsys):
    import json

    from scripts.demo.first_step_probe import main, prompts_for
    from scripts.demo.panel_prompts import PANEL, PANEL_2

    assert prompts_for("train", 0, 0, "1") is PANEL and prompts_for("train", 0, 0, "2") is PANEL_2
    # The first panel: the bundled demo misses one of it (`knock knock`), none of the second since the twentieth pass.
    assert main(["--model", str(LLADA), "--panel", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["prompts"] == "panel 1" and report["n"] == 60
    assert set(report["accuracy"]) == set(PANEL)
    # Every miss sits on the wrong side of the model's own threshold, 0: thanks below it, the rest above.
    assert report["missed"] and all((m["margin"] < 0) == (m["intent"] == "thanks") for m in report["missed"])
    assert 0.5 < report["margin"]["auc"] <= 1 and report["margin"]["best_accuracy"] >= report["overall"]
    # Each miss says how many answer positions its first block held; the accuracy by those ranges shows the misses.
    assert all(1 <= m["held"] <= 32 for m in report["missed"])
    assert set(report["by_held"]) <= {"01-08", "09-16", "17-24", "25-32"} and min(report["by_held"].values()) < 1


def test_held_positions_fall_in_ranges_of_eight():
    from scripts.demo.first_step_probe import held_range

    assert [held_range(h) for h in (1, 8, 9, 16, 17, 32)] == ["01-08", "01-08", "09-16", "09-16", "17-24", "25-32"]


def test_separation_tells_a_bias_from_a_ranking():
    from scripts.demo.first_step_probe import separation

    # Every thanks prompt above every other one, all below 0: ranked right, biased to the about line.
    biased = [(True, -3.0), (True, -2.0), (False, -10.0), (False, -9.0)]
    assert separation(biased) == {"auc": 1.0, "best_accuracy": 1.0, "best_threshold": -3.0}
    mixed = [(True, 1.0), (True, -1.0), (False, 0.0), (False, -2.0)]
    assert separation(mixed)["auc"] == 0.75 and separation(mixed)["best_accuracy"] == 0.75
    with pytest.raises(ValueError):
        separation([(True, 1.0)])


def test_a_closer_replaces_the_prompts_own(capsys):
    import json

    from scripts.demo.first_step_probe import main, with_closer

    asked = {"thanks": ("thx a ton 🙏", "ty so much!!", "THANK YOU", "cheers :)"), "greeting": ("hi!! 👋",)}
    assert with_closer(asked, " 🙏") == {
        "thanks": ("thx a ton 🙏", "ty so much 🙏", "THANK YOU 🙏", "cheers :) 🙏"), "greeting": ("hi 🙏",)}
    assert with_closer(asked, "")["thanks"][:2] == ("thx a ton", "ty so much")
    assert with_closer({"x": ("!!",)}, ".") == {"x": ("!!.",)}   # nothing left: the prompt is kept whole
    assert main(["--model", str(LLADA), "--panel", "3", "--closer", " lol"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["closer"] == " lol" and report["prompts"] == "panel 3" and report["n"] == 60


def test_the_probe_asks_each_intents_own_words_alone(capsys):
    import json

    from scripts.demo.chat_compounds import PARTS
    from scripts.demo.first_step_probe import main, prompts_for

    asked = prompts_for("train", 0, 0, parts=True)
    assert set(asked) == set(PARTS) and "" not in {p for prompts in asked.values() for p in prompts}
    assert set(asked["greeting"]) == set(PARTS["greeting"][0]) - {""}
    assert set(asked["thanks"]) == set(PARTS["thanks"][1]) - {""}
    assert len(asked["thanks"]) == len(set(asked["thanks"]))   # a word listed twice is asked once
    with pytest.raises(SystemExit):   # two sets of prompts named
        main(["--model", str(LLADA), "--parts", "--panel", "2"])
    assert "give one" in capsys.readouterr().err
    assert main(["--model", str(LLADA), "--parts", "--closer", " for the help"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["prompts"] == "parts" and report["n"] == sum(len(p) for p in asked.values())
    # The bundled demo reads the tail, not the words: every thanks word before it is thanks, and so are greetings.
    assert report["accuracy"]["thanks"] == 1.0 and report["accuracy"]["greeting"] < 0.5
