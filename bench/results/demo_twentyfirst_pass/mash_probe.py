"""Keyboard mashing written apart from the trainer's generator: a held key, two keys in turn, random letters,
capitals, punctuation, symbol and emoji runs and digits, one to three of them a prompt. Each is asked at the
demo's defaults (thinking off); the right answer is the about line. Prints one JSON line: accuracy, garbled
answers and the first wrong ones. Run from the repository root:

    PYTHONPATH=. python bench/results/demo_twentyfirst_pass/mash_probe.py MODEL [SEED] [N]
"""

import json
import random
import sys

import engine
from bench.eval_panel import run_configuration

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def prompts(seed: int, n: int) -> tuple[str, ...]:
    rng = random.Random(seed)

    def held():
        return rng.choice(LETTERS) * rng.randint(4, 12)

    def pair():
        a, b = rng.sample(LETTERS, 2)
        return (a + b) * rng.randint(2, 5) + (a if rng.random() < .5 else "")

    def letters():
        return "".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 12)))

    def capitals():
        return letters().upper()

    def punctuation():
        return rng.choice(";:.,!?#*/") * rng.randint(2, 6)

    def symbols():
        return "".join(rng.choice("@#$%^&*()_+=[]{}<>~|") for _ in range(rng.randint(2, 8)))

    def emoji():
        return "".join(rng.choice("😀😂🙏👍🔥💀🤔😭✨🎉") for _ in range(rng.randint(1, 5)))

    def digits():
        return "".join(rng.choice("0123456789") for _ in range(rng.randint(2, 9)))

    parts = [held, pair, letters, capitals, punctuation, symbols, emoji, digits]
    return tuple(" ".join(rng.choice(parts)() for _ in range(rng.randint(1, 3))) for _ in range(n))


def main() -> None:
    model = engine.load(sys.argv[1])
    seed, n = (int(sys.argv[2]) if len(sys.argv) > 2 else 11), (int(sys.argv[3]) if len(sys.argv) > 3 else 150)
    row = run_configuration(model, engine.Settings.from_dict({}), False, {"out_of_scope": prompts(seed, n)})
    print(json.dumps({"model": sys.argv[1], "seed": seed, "n": n, "accuracy": row["accuracy"]["out_of_scope"],
                      "garbled": row["garbled"], "garbled_examples": row["garbled_examples"],
                      "wrong": row["wrong_intent_failures"]}, ensure_ascii=False))


if __name__ == "__main__":
    main()
