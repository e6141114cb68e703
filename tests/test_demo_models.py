"""The bundled demos' cards and the picker's list of real checkpoints (plain data, no Textual)."""

from __future__ import annotations

import json

import engine
from tui.demo_models import DEMO_NAMES, DEMO_ROOT, REAL_CHECKPOINTS, bundled_demos, default_demo, demo_card
from tui.screens.model_picker import ModelChoice, demo_choices, download_choices


def test_both_bundled_demos_are_listed_diffusion_gemma_first_with_example_prompts():
    cards = bundled_demos()
    assert [card.path.name for card in cards] == list(DEMO_NAMES)
    assert [card.family for card in cards] == ["diffusion_gemma", "llada2_moe"]
    assert default_demo() == cards[0].path
    for card in cards:
        assert 1 <= len(card.examples) <= 3 and all(card.examples)
        assert card.summary.startswith("trained tiny model · ")


def test_each_bundled_demo_loads_in_its_real_layout_and_carries_a_model_card():
    layouts = {}
    for card in bundled_demos():
        model = engine.load(str(card.path))
        assert model.family == card.family
        layouts[card.family] = json.loads((card.path / "config.json").read_text()).get("quantization")
        readme = (card.path / "README.md").read_text()
        for heading in ("## Tasks it answers", "## Measured accuracy", "## Training", "## Data recipe", "## Limits"):
            assert heading in readme, (card.path.name, heading)
        # The card's size is the checkpoint's own (it said 6 layers of the LLaDA-2 demo grown to 8).
        config = json.loads((card.path / "config.json").read_text())
        assert f"{config.get('text_config', config)['num_hidden_layers']} layers" in readme.split("\n\n")[1]
    # One of them exercises the mlx-community quantized path.
    assert sum(layout is not None for layout in layouts.values()) == 1


def test_the_demos_together_stay_within_40_mb():
    size = sum(f.stat().st_size for f in DEMO_ROOT.rglob("*") if f.is_file())
    assert size <= 40 * 2**20, size


def test_a_folder_without_a_readable_card_is_not_a_demo(tmp_path):
    assert demo_card(tmp_path) is None
    (tmp_path / "demo.json").write_text("{not json")
    assert demo_card(tmp_path) is None
    (tmp_path / "demo.json").write_text(json.dumps({"title": "T", "family": "llada2_moe", "summary": "s",
                                                     "examples": ["a", "b", "c", "d"]}))
    card = demo_card(tmp_path)
    assert card is not None and card.examples == ("a", "b", "c")


def test_the_picker_offers_demos_then_real_checkpoints_not_already_cached():
    demos = demo_choices()
    assert [c.title for c in demos] == ["DiffusionGemma demo (bundled, works offline)",
                                        "LLaDA-2 demo (bundled, works offline)"]
    cached = [ModelChoice(REAL_CHECKPOINTS[0].hub_id, REAL_CHECKPOINTS[0].hub_id, "cached")]
    offered = download_choices(cached)
    assert [c.ref for c in offered] == [real.hub_id for real in REAL_CHECKPOINTS[1:]]
    assert all(c.detail.startswith("download ") and "of memory" in c.detail for c in offered)


def test_each_bundled_demo_ships_the_sampler_defaults_its_code_defines():
    # The bundler writes scripts/demo/configs.py's generation_config, so a default tuned there (the LLaDA-2
    # demo's stricter threshold) is the one users get; a stale bundle fails here.
    from scripts.demo.demo_config import demo_checkpoint_config

    for name in DEMO_NAMES:
        folder = DEMO_ROOT / name
        family = json.loads((folder / "config.json").read_text())["model_type"]
        shipped = json.loads((folder / "generation_config.json").read_text())
        assert shipped == demo_checkpoint_config(family)[1], name


def test_a_model_cards_training_time_leaves_out_the_gaps_between_phases():
    from scripts.demo.bundle import training_hours

    # Three log lines 3 minutes apart, a 90-minute stop between phases, then two more lines.
    times = [0, 180, 360, 360 + 5400, 360 + 5400 + 180]
    assert training_hours([{"time": t} for t in times]) == round(3 * 180 / 3600, 2)


def test_a_model_card_counts_the_steps_up_to_where_the_last_phase_stopped(tmp_path):
    from scripts.demo.bundle import training_summary

    rows = [{"step": 25, "loss": 2.0, "time": 0}, {"step": 50, "loss": 1.0, "time": 60}, {"stopped_at": 61}]
    (tmp_path / "log.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert training_summary(tmp_path) == {"steps": 61, "final_loss": 1.0, "hours": round(60 / 3600, 2)}


def test_a_model_card_writes_a_loss_logged_as_zero_as_below_the_logs_rounding():
    from scripts.demo.bundle import loss_text

    assert loss_text(0.0) == "< 0.0001 (rounded to 0 in the log)"
    assert loss_text(0.0005) == "0.0005" and loss_text(None) == "not logged"


def test_the_empty_chats_three_examples_cover_each_answer_then_more_prompts_sharing_one():
    # Small talk has two answers now (greetings, who-are-you and what-can-you-do share the about-me one): three
    # examples still come, distinct answers first, then the shortest other prompt, each one answered right.
    from scripts.demo.bundle import pick_examples

    about, welcome = "I'm a tiny demo ... (ctrl+l).", "You're welcome!"
    rows = {"chat": {"accuracy": 0.8, "correct_prompts": [("Morning!", about), ("Many thanks!", welcome),
                                                          ("Thanks a bunch, really.", welcome),
                                                          ("Morning!", about), ("Who are you, really?", about),
                                                          ("A prompt far longer than fits on one example line", about)]},
            "arithmetic": {"accuracy": 0.0, "correct_prompts": []}}
    picked = pick_examples(rows, [], [])
    assert picked == [("Many thanks!", welcome), ("Morning!", about), ("Who are you, really?", about)]
    showcase = ("What is 47 + 385?", "47 + 385 = 432")
    assert pick_examples(rows, [], [showcase])[:2] == [showcase, ("Many thanks!", welcome)]


def test_the_card_reads_its_size_from_the_checkpoint():
    from scripts.demo.bundle import size_line

    grown = {"hidden_size": 128, "num_hidden_layers": 8, "num_experts": 4, "num_experts_per_tok": 2}
    assert size_line(grown, 2_310_812) == "hidden 128, 8 layers, 4 experts top-2, about 2.3 M parameters"
    gemma = {"text_config": {"hidden_size": 64, "num_hidden_layers": 2, "num_experts": 4, "top_k_experts": 2}}
    assert size_line(gemma, 400_000).startswith("hidden 64, 2 layers, 4 experts top-2")
