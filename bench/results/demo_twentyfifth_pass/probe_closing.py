"""The DiffusionGemma demo's answers, thinking on, for the prompt and setting pairs that the twenty-fourth pass's
grids garbled (five never closed their thought, one misspelt the thanks line) and the defaults' two misses.

    PYTHONPATH=. python bench/results/demo_twentyfifth_pass/probe_closing.py MODEL_FOLDER
"""

import sys

import engine
from bench.eval_panel import answer_once

CASES = (("omg it works now!!", 0.5, 2), ("omg it works now!!", 1.0, 2), ("omg it works now!!", 1.0, 3),
         ("omg you're amazing 😍", 0.5, 2), ("omg you're amazing 😍", 1.0, 2),
         ("nice one, exactly what i needed", 0.5, 2),
         ("traffic was AWFUL today", None, None), ("merci beaucoup", None, None))   # None: the demo's defaults

engine.prepare_process()
model = engine.load(sys.argv[1])
for prompt, temp, seed in CASES:
    settings = engine.Settings.from_dict({} if temp is None else {"temp": temp, "seed": seed})
    got = answer_once(model, prompt, settings, think=True)
    print(f"{prompt!r} T{temp} s{seed} | R: {got['reasoning']!r} | C: {got['content']!r}")
