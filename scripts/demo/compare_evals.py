"""Does a candidate demo beat the bundled one? The rule every training pass has kept (bench/README.md, "Demo
models"): level or ahead on every intent of every prompt set and setting, and no more garbled answers in all.

    python -m scripts.demo.compare_evals BUNDLED_EVALS CANDIDATE_EVALS

Each folder holds bench/eval_demo.py --panel outputs named by their prompt set (panel1.json, panel2.json,
composed7.json, composed11.json, ...); the sets both folders have are compared, setting by setting (thinking,
temperature, seed). Prints a Markdown table, bundled / candidate, and a last line saying whether the candidate
beats the bundled demo and, when not, where it falls behind. Exits 0 either way; 2 when no set is in both.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

INTENTS = ("greeting", "identity", "capabilities", "thanks", "out_of_scope")


def setting_name(configuration: dict) -> str:
    parts = ["thinking on" if configuration.get("think") else "thinking off"]
    if configuration.get("temp") is not None:
        parts.append(f"T {configuration['temp']}")
    if configuration.get("seed") is not None:
        parts.append(f"seed {configuration['seed']}")
    return ", ".join(parts)


def by_setting(evaluation: dict) -> dict[str, dict]:
    return {setting_name(c): c for c in evaluation["configurations"]}


def compare(bundled: dict[str, dict], candidate: dict[str, dict]) -> tuple[list[str], list[str]]:
    """(Markdown table rows, where the candidate falls behind) over the sets and settings both have. A drop on
    any intent is behind; so is more garbled answers over everything compared."""
    rows, behind = [], []
    garbled = [0, 0]
    for name in sorted(set(bundled) & set(candidate)):
        old, new = by_setting(bundled[name]), by_setting(candidate[name])
        for setting in [s for s in old if s in new]:
            cells = []
            for intent in INTENTS:
                a, b = old[setting]["accuracy"].get(intent), new[setting]["accuracy"].get(intent)
                cells.append(f"{_percent(a)} / {_percent(b)}")
                if a is not None and b is not None and b < a:
                    behind.append(f"{name}, {setting}: {intent} {_percent(a)} -> {_percent(b)}")
            garbled[0] += old[setting]["garbled"]
            garbled[1] += new[setting]["garbled"]
            rows.append(f"| {name}, {setting} | " + " | ".join(cells)
                        + f" | {old[setting]['garbled']} / {new[setting]['garbled']} |")
    if garbled[1] > garbled[0]:
        behind.append(f"garbled answers {garbled[0]} -> {garbled[1]}")
    return rows, behind


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{round(100 * value)} %"


def load_folder(folder: Path) -> dict[str, dict]:
    """{set: evaluation} of folder's *.json; SystemExit with one line for a file that is not an evaluation (an
    evaluation cut short leaves an empty one)."""
    evaluations = {}
    for path in sorted(folder.glob("*.json")):
        try:
            evaluation = json.loads(path.read_text(encoding="utf-8"))
            by_setting(evaluation)
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}: not a bench/eval_demo.py --panel result ({type(exc).__name__})") from None
        evaluations[path.stem] = evaluation
    return evaluations


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bundled", type=Path, help="folder of the bundled demo's evaluations")
    parser.add_argument("candidate", type=Path, help="folder of the candidate's evaluations")
    args = parser.parse_args(argv)
    bundled, candidate = load_folder(args.bundled), load_folder(args.candidate)
    if not set(bundled) & set(candidate):
        print(f"no prompt set evaluated in both {args.bundled} and {args.candidate}", file=sys.stderr)
        return 2
    rows, behind = compare(bundled, candidate)
    print("| set, setting (bundled / candidate) | " + " | ".join(INTENTS) + " | garbled |")
    print("|---" * (len(INTENTS) + 2) + "|")
    print("\n".join(rows))
    print("beats the bundled demo: yes" if not behind else "beats the bundled demo: no; behind on " + "; ".join(behind))
    return 0


if __name__ == "__main__":
    sys.exit(main())
