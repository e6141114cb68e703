"""Which prompts of a hand-written panel the demos' training has seen, compared as chat_compose.normal_form does.

    python -m scripts.demo.panel_overlap --panel 3 [--n 200000] [--seed 0]

Training's small talk comes from three places: the fixed phrasings of scripts/demo/tasks_chat.py, the composed
bodies and out-of-scope patterns of scripts/demo/chat_compose.py (their training side), and what composition
makes of them (openers, closers, noise, compounds). The first two are listed whole; the third is drawn at random,
so `--n` composed training prompts stand for it and a rare composition can be missed. A panel written outside the
project holds everyday phrases training has too ("thx", "cheers"); its accuracy means the most on the rest.
Prints one JSON object: per intent, each seen prompt with where training has it, and the counts.
"""

from __future__ import annotations

import argparse
import json
import random

from . import chat_compose, tasks_chat
from .panel_prompts import PANELS


def training_forms(n: int, seed: int = 0) -> dict[str, set[str]]:
    """{source: normal forms} of training's small-talk prompts: "phrasing", "template" and `n` "composed"."""
    normal = chat_compose.normal_form
    phrasings = {normal(p) for ph in tasks_chat.PHRASINGS.values() for p in ph.train}
    templates = {normal(b) for intent in chat_compose.BODIES for b in chat_compose.bodies(intent, "train")}
    templates |= {normal(p) for _, p in chat_compose.out_of_scope_patterns("train")}
    rng = random.Random(seed)
    composed = set()
    for _ in range(n):
        drawn = chat_compose.example(rng, "train", "llada2_moe")   # the prompt does not depend on the family
        composed.add(normal(drawn.messages[0]["content"]))
    return {"phrasing": phrasings, "template": templates, "composed": composed}


def overlap(panel: dict[str, tuple[str, ...]], forms: dict[str, set[str]]) -> dict:
    """The panel's prompts whose normal form is in any of `forms`, per intent, with the sources that hold it."""
    seen = {}
    for intent, prompts in panel.items():
        hits = []
        for prompt in prompts:
            where = [source for source, held in forms.items() if chat_compose.normal_form(prompt) in held]
            if where:
                hits.append({"prompt": prompt, "in": where})
        seen[intent] = hits
    total = sum(len(p) for p in panel.values())
    return {"seen": seen, "seen_count": sum(len(h) for h in seen.values()), "n": total}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--panel", default="3", choices=tuple(PANELS), help="which panel (default: 3)")
    parser.add_argument("--n", type=int, default=200_000, help="composed training prompts to draw (default: 200000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.n < 0:
        parser.error("--n must be 0 or more")
    result = overlap(PANELS[args.panel], training_forms(args.n, args.seed))
    print(json.dumps({"panel": args.panel, "n_composed": args.n, "seed": args.seed} | result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
