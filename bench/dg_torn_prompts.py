"""How often the DiffusionGemma demo garbles the prompts it is torn over, under sampler settings of your choice.

    python bench/dg_torn_prompts.py [--setting NAME=VALUE ...] [--seeds 6] [--thoughts]

The prompts are the ones the demo garbled on the hand-written panels or their grids (thinking off and on), each
asked with seeds 1..N: a quick way to compare sampler settings before measuring them on whole panels with
bench/eval_demo.py. `--thoughts` asks instead the prompts whose *thought* the demo garbled over the grids at its
defaults (thinking on), and counts garbled thoughts too. Prints one JSON line: the settings, garbled answers (and
thoughts) of all asked, mean steps per block.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402

engine.prepare_process()  # first: it loads OpenBLAS before MLX on Linux
from bench.eval_demo import settings_from  # noqa: E402
from bench.eval_panel import fixed_lines, reasoning_lines  # noqa: E402
from engine.settings import SettingsError  # noqa: E402

TORN = (("merci beaucoup", False), ("much obliged", True), ("qwe rty uio", False), ("qwe rty uio", True),
        ("cheers, that's great", False), ("cheers, that's great", True), ("ty so much!!", False),
        ("thx a ton 🙏", True),
        # The demo bundled on 2026-12-07 (word pieces) tears over these instead (tests/test_demo_denoising.py).
        ("remind me to call mum at 5pm", False), ("wow this was super helpful. I'm impressed", False),
        ("asdfghjkl qwerty zxcv", False),
        # The demo bundled in the twenty-third pass: the former defaults garble these at seed 0 (the first) or 3
        # (the second), its own defaults the second at seed 1.
        ("Give me a recipe for butter chicken pls", False), ("blorptastic fizzwump", False))
# Garbled thoughts over the three panels' grids at the twelfth pass's defaults (bench/results/demo_twelfth_pass).
TORN_THOUGHTS = tuple((prompt, True) for prompt in (
    "summarise this article for me", "much obliged", "qwe rty uio", "Translate 'good night' into French.",
    "Thanks! That's exactly what I needed.", "I really appreciate your help.", "what does 'serendipity' mean?",
    "Translate 'thank you' into Spanish."))


def garbled_count(model, settings: dict, seeds: int, prompts: tuple[tuple[str, bool], ...]) -> dict:
    lines, reasons = fixed_lines(model.family), reasoning_lines()
    garbled, garbled_thoughts, asked, steps = 0, 0, 0, []
    for prompt, think in prompts:
        for seed in range(1, seeds + 1):
            chosen = engine.Settings.from_dict(settings | {"seed": seed})
            finished = list(engine.generate(model, messages=[{"role": "user", "content": prompt}],
                                            settings=chosen, think=think))[-1]
            asked += 1
            garbled += finished.content.strip() not in lines
            garbled_thoughts += think and finished.reasoning.strip() not in reasons
            steps += list(finished.stats.steps_per_block)
    return {"settings": settings, "garbled": garbled, "garbled_thoughts": garbled_thoughts, "of": asked,
            "steps_per_block": round(sum(steps) / len(steps), 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="tui/demo/diffusion-gemma-demo")
    parser.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--thoughts", action="store_true", help="ask the prompts whose thought the demo garbles")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    try:
        settings = settings_from(args.setting)
    except (ValueError, SettingsError) as error:
        parser.error(str(error))
    model = engine.load(args.model)
    if model.family != "diffusion_gemma":
        parser.error(f"{args.model}: a DiffusionGemma demo is needed (this one is {model.family})")
    prompts = TORN_THOUGHTS if args.thoughts else TORN
    row = garbled_count(model, settings, args.seeds, prompts)
    print(json.dumps(row | {"prompts": "thoughts" if args.thoughts else "answers"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
