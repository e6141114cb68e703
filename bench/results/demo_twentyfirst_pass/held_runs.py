"""A key held down (and two keys in turn) for 3 to 40 keys, asked at the demo's defaults: one character a run
length, `.` the about line, `T` the thanks line, `X` anything else (garbled). Run from the repository root:

    PYTHONPATH=. python bench/results/demo_twentyfirst_pass/held_runs.py MODEL [KEYS]
"""

import sys

import engine
from bench.eval_panel import answer_once, expected_answer


def mark(got: str, family: str) -> str:
    if got == expected_answer("identity", family):
        return "."
    return "T" if got == expected_answer("thanks", family) else "X"


def main() -> None:
    model = engine.load(sys.argv[1])
    settings = engine.Settings.from_dict({})
    runs = {key: key * 40 for key in (sys.argv[2] if len(sys.argv) > 2 else "jqf")} | {"kd": "kd" * 20}
    for name, run in runs.items():
        marks = "".join(mark(answer_once(model, run[:n], settings, False)["content"], model.family)
                        for n in range(3, 41))
        print(f"{name:>2} {marks}", flush=True)


if __name__ == "__main__":
    main()
