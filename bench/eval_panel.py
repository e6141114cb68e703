"""The hand-written panel (scripts/demo/panel_prompts.py) through a demo, as the app would run it.

For each configuration (the demo's own defaults; optionally a grid of temperatures × seeds × thinking) every
panel prompt is answered once. Reported per configuration: accuracy per intent (the exact fixed answer:
thanks → the thanks line, everything else → the about line), garbled answers (not any of the fixed lines),
reasoning other than the line given for its answer and, of those, reasoning that is none of the lines (thinking
on, DiffusionGemma), steps per block (mean and minimum), full blocks that took under three steps, positions
accepted at a block's first step (mean fraction) and seconds per answer (mean and worst). Only full blocks are
held to three steps: LLaDA-2's first block shares the prompt's tail, and its official schedule (block_length /
steps positions a step) fills a few left in one.
"""

from __future__ import annotations

import time

import engine
from engine.events import BlockCommitted, Finished, Step
from scripts.demo.panel_prompts import PANEL
from scripts.demo.chat_compose import OUT_OF_SCOPE_REASONING
from scripts.demo.tasks_chat import REASONING, chat_answer

ABOUT_INTENTS = ("greeting", "identity", "capabilities", "out_of_scope")


def fixed_lines(family: str) -> set[str]:
    """The demo's two answers: the about line and the thanks line. Any other answer is garbled."""
    return {chat_answer(intent, family) for intent in ("identity", "thanks")}


def reasoning_lines() -> set[str]:
    """The demo's reasoning lines (thinking on, DiffusionGemma). Any other thought is garbled."""
    return {*REASONING.values(), OUT_OF_SCOPE_REASONING}


def expected_answer(intent: str, family: str) -> str:
    return chat_answer("thanks" if intent == "thanks" else "identity", family)


def answer_once(model, prompt: str, settings: engine.Settings, think: bool) -> dict:
    """One generation: its content, reasoning, steps per block, first-step acceptance and wall time."""
    began = time.perf_counter()
    first_step_fraction, blocks, finished = [], [], None
    for event in engine.generate(model, messages=[{"role": "user", "content": prompt}], settings=settings,
                                 think=think):
        if isinstance(event, Step) and event.step == 0:
            first_step_fraction.append(event.newly_accepted / max(len(event.canvas), 1))
        elif isinstance(event, BlockCommitted):
            blocks.append(block_record(event))
        elif isinstance(event, Finished):
            finished = event
    return {"content": finished.content.strip(), "reasoning": finished.reasoning.strip(),
            "steps": list(finished.stats.steps_per_block), "first": first_step_fraction, "blocks": blocks,
            "seconds": time.perf_counter() - began}


def block_record(block: BlockCommitted) -> tuple[int, int, int]:
    """(steps taken, positions filled, block length): what `full_blocks_under_three_steps` reads."""
    return block.steps, sum(block.accepted_per_step) - block.edits, len(block.committed)


def full_blocks_under_three_steps(blocks: list[tuple[int, int, int]]) -> int:
    """Of (steps taken, positions filled, block length) per block, the blocks filled whole in under three steps."""
    return sum(taken < 3 and filled >= length for taken, filled, length in blocks)


def run_configuration(model, settings: engine.Settings, think: bool, panel: dict | None = None) -> dict:
    family = model.family
    fixed = fixed_lines(family)
    per_intent, garbled, wrong_reasoning, steps, firsts, seconds, failures = {}, [], 0, [], [], [], []
    reasons, garbled_reasoning = reasoning_lines(), []
    short_blocks = 0   # full blocks that took fewer than three steps
    for intent, prompts in (PANEL if panel is None else panel).items():
        right = 0
        for prompt in prompts:
            got = answer_once(model, prompt, settings, think)
            ok = got["content"] == expected_answer(intent, family)
            right += ok
            if got["content"] not in fixed:
                garbled.append({"prompt": prompt, "got": got["content"]})
            elif not ok and len(failures) < 6:
                failures.append({"intent": intent, "prompt": prompt, "got": got["content"][:40]})
            if think and got["reasoning"] != REASONING.get(intent, OUT_OF_SCOPE_REASONING):
                wrong_reasoning += 1
                if got["reasoning"] not in reasons:
                    garbled_reasoning.append({"prompt": prompt, "got": got["reasoning"]})
            steps += got["steps"]
            short_blocks += full_blocks_under_three_steps(got["blocks"])
            firsts += got["first"]
            seconds.append(got["seconds"])
        per_intent[intent] = round(right / len(prompts), 3)
    row = {"think": think, "temp": settings.temp, "seed": settings.seed, "accuracy": per_intent,
           "garbled": len(garbled), "garbled_examples": garbled[:3], "wrong_intent_failures": failures,
           "steps_per_block_mean": round(sum(steps) / len(steps), 2), "steps_per_block_min": min(steps),
           "full_blocks_under_3_steps": short_blocks,
           "first_step_accepted_fraction": round(sum(firsts) / max(len(firsts), 1), 3),
           "seconds_per_answer_mean": round(sum(seconds) / len(seconds), 3),
           "seconds_per_answer_max": round(max(seconds), 3)}
    if think:
        # Wrong = any line but its own, garbled ones included; garbled = none of the reasoning lines at all.
        row["reasoning_wrong_intent"] = wrong_reasoning
        row["reasoning_garbled"] = len(garbled_reasoning)
        row["reasoning_garbled_examples"] = garbled_reasoning[:3]
    return row


THINKING = {"both": (False, True), "off": (False,), "on": (True,)}


def configurations(family: str, grid: bool, base: dict | None = None,
                   thinking: str = "both") -> list[tuple[engine.Settings, bool]]:
    """The defaults (with `base`'s settings on top, e.g. a former default to compare with), then the grid;
    `thinking` (DiffusionGemma: both, on or off) picks which of thinking on and off are run."""
    base = base or {}
    sides = THINKING[thinking] if family == "diffusion_gemma" else (False,)
    configs = [(engine.Settings.from_dict(base), think) for think in sides]
    if grid:
        configs += [(engine.Settings.from_dict(base | {"temp": temp, "seed": seed}), think) for think in sides
                    for temp in (0.0, 0.5, 1.0) for seed in (1, 2, 3)]
    return configs


def composed_panel(n: int, seed: int) -> dict[str, tuple[str, ...]]:
    """`n` prompts per intent (and `n` out-of-scope ones) composed from the *held-out* templates of
    scripts/demo/chat_compose.py: bodies and out-of-scope patterns training never saw, with its noise."""
    from scripts.demo import chat_compose

    return chat_compose.composed_prompts(n, seed, "heldout")


def evaluate_panel(model, grid: bool = False, panel: dict | None = None, base: dict | None = None,
                   thinking: str = "both") -> dict:
    rows = [run_configuration(model, settings, think, panel)
            for settings, think in configurations(model.family, grid, base, thinking)]
    return {"configurations": rows, "garbled_total": sum(r["garbled"] for r in rows),
            "steps_per_block_min": min(r["steps_per_block_min"] for r in rows),
            "full_blocks_under_3_steps": sum(r["full_blocks_under_3_steps"] for r in rows),
            "seconds_per_answer_max": max(r["seconds_per_answer_max"] for r in rows)}
