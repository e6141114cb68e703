"""How often the LLaDA-2 demo's token editing re-writes a filled position, over the seven panels at the demo's
defaults (thinking off), and what the answer would have been with editing off. Prints one JSON object. Run from
the repository root:

    PYTHONPATH=. python bench/results/demo_twentyfirst_pass/count_edits.py MODEL
"""

import json
import sys

import engine
from engine.events import Finished, Step
from scripts.demo.panel_prompts import PANELS


def answer(model, prompt: str, settings) -> tuple[str, int]:
    edits, content = 0, ""
    for event in engine.generate(model, messages=[{"role": "user", "content": prompt}], settings=settings):
        if isinstance(event, Step) and event.edited is not None:
            edits += int(event.edited.sum())
        elif isinstance(event, Finished):
            content = event.content.strip()
    return content, edits


def main() -> None:
    model = engine.load(sys.argv[1])
    on, off = engine.Settings.from_dict({}), engine.Settings.from_dict({"token_editing": False})
    answers, edited, changed = 0, [], []
    for name, panel in PANELS.items():
        for prompts in panel.values():
            for prompt in prompts:
                answers += 1
                with_edits, edits = answer(model, prompt, on)
                if edits:
                    edited.append({"panel": name, "prompt": prompt, "edits": edits})
                    without = answer(model, prompt, off)[0]
                    if without != with_edits:
                        changed.append({"panel": name, "prompt": prompt, "editing_on": with_edits,
                                        "editing_off": without})
    print(json.dumps({"model": sys.argv[1], "answers": answers, "answers_with_edits": len(edited),
                      "positions_edited": sum(e["edits"] for e in edited), "answers_changed_by_editing": changed,
                      "edited": edited}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
