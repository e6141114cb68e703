"""The demo models' curriculum: generated chat examples, a weighted task mixture, and the train/held-out split.

What the tiny demo models (one per family) are trained on and what `bench/eval_demo.py` checks them on.
Everything is generated from a `random.Random`, so a seed fixes a sample exactly (stdlib only).

Held-out rules (the evaluation must test generalisation, so none of these ever appears in a train sample):
* phrasing templates: each sub-task lists its own held-out templates (`PHRASINGS[task][subtask].heldout`);
* words: a fixed ~15 % of `words.txt`, chosen by a stable hash (`heldout.is_heldout_word`; a word and its
  reversal share a side, and words of the curriculum's own text are always training words); held-out
  samples use only those words, train samples never do;
* number tuples: arithmetic operand pairs (unordered for + and ×), counting ranges (start, end, step) and
  sorted number lists whose stable hash falls in 1/8 (`heldout.is_heldout_tuple`);
* chat intents: held-out phrasings only (their answers are fixed).
Earlier turns of an example are drawn from the same split as its final turn.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from . import tasks_arithmetic, tasks_chat, tasks_counting, tasks_repeat, tasks_sorting, tasks_words
from .heldout import check_split, is_heldout_tuple, is_heldout_word, stable_hash, words_for  # noqa: F401  (API)
from .tasks_chat import FAMILY_LABELS

TASKS = ("arithmetic", "sorting", "words", "repeat", "counting", "chat")
FAMILIES = tuple(FAMILY_LABELS)
MODULES = {"arithmetic": tasks_arithmetic, "sorting": tasks_sorting, "words": tasks_words,
           "repeat": tasks_repeat, "counting": tasks_counting, "chat": tasks_chat}
SUBTASKS = {task: module.SUBTASKS for task, module in MODULES.items()}
PHRASINGS = {task: module.PHRASINGS for task, module in MODULES.items()}

# Arithmetic is the hardest task for a tiny model and gets the most examples; chat answers are few and fixed.
MIXTURE_WEIGHTS = {"arithmetic": 0.30, "sorting": 0.15, "words": 0.20, "repeat": 0.12, "counting": 0.13, "chat": 0.10}

# Context variety, so the model answers the last turn whatever comes before it.
HISTORY_PROBABILITY = 0.15    # 1-2 earlier turns (a previous task and its correct answer)
HISTORY_TASKS = tuple(t for t in TASKS if t != "counting")   # counting answers would make prompts long
SYSTEM_PROBABILITY = 0.10
SYSTEM_PROMPTS = ("You are a helpful assistant.", "Be brief.", "You are a tiny demo model.", "Answer the question.",
                  "Keep your answers short.", "You are a friendly assistant.", "Be precise.")


@dataclass(frozen=True)
class Example:
    task: str                     # one of TASKS
    messages: tuple[dict, ...]    # optional system message, optional earlier turns, the final user turn
    think: bool                   # thinking requested (DiffusionGemma only)
    reasoning: str                # the thought-channel text when `think`, else ""
    answer: str                   # the exact expected answer (Markdown allowed)
    subtask: str = ""             # e.g. "add", "words_reverse", "greeting"
    template: str = ""            # the final turn's phrasing template, as listed in PHRASINGS


def _check(task: str, split: str, family: str, think: bool) -> None:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, not {task!r}")
    check_split(split)
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, not {family!r}")
    if think and family != "diffusion_gemma":
        # LLaDA-2's template hard-codes "detailed thinking off": it has no thought channel to train.
        raise ValueError("thinking is a DiffusionGemma feature; LLaDA-2 examples take think=False")


def sample(rng: random.Random, task: str, split: str, *, family: str, think: bool = False,
           subtask: str | None = None) -> Example:
    """One example of `task` from `split` ("train" | "heldout") for `family`.

    The random draws do not depend on `think`, so the same seed gives the same prompts with and without it."""
    _check(task, split, family, think)
    if subtask is not None and subtask not in SUBTASKS[task]:
        raise ValueError(f"{task} has sub-tasks {SUBTASKS[task]}, not {subtask!r}")
    messages: list[dict] = []
    if rng.random() < SYSTEM_PROBABILITY:
        messages.append({"role": "system", "content": rng.choice(SYSTEM_PROMPTS)})
    if rng.random() < HISTORY_PROBABILITY:
        for _ in range(rng.randint(1, 2)):
            earlier = MODULES[rng.choice(HISTORY_TASKS)].draw(rng, split, family)
            # The app sends earlier answers without their reasoning, so history never carries a thought.
            messages += [{"role": "user", "content": earlier.prompt}, {"role": "assistant", "content": earlier.answer}]
    drawn = MODULES[task].draw(rng, split, family, subtask)
    messages.append({"role": "user", "content": drawn.prompt})
    return Example(task=task, messages=tuple(messages), think=think, reasoning=drawn.reasoning if think else "",
                   answer=drawn.answer, subtask=drawn.subtask, template=drawn.template)


def parse_focus(text: str) -> dict[str, tuple[str, ...]]:
    """"arithmetic:add,repeat,chat" → {"arithmetic": ("add",), "repeat": all its sub-tasks, "chat": ...}."""
    focus: dict[str, tuple[str, ...]] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        task, _, subtask = item.partition(":")
        if task not in TASKS:
            raise ValueError(f"focus task must be one of {TASKS}, not {task!r}")
        if subtask and subtask not in SUBTASKS[task]:
            raise ValueError(f"{task} has sub-tasks {SUBTASKS[task]}, not {subtask!r}")
        focus[task] = focus.get(task, ()) + ((subtask,) if subtask else SUBTASKS[task])
    return focus


def sample_mixture(rng: random.Random, split: str, *, family: str, think_probability: float = 0.0,
                   focus: dict[str, tuple[str, ...]] | None = None) -> Example:
    """An example of a task drawn by MIXTURE_WEIGHTS; thinking on with `think_probability` (DiffusionGemma).

    `focus` (parse_focus) narrows the mixture to some tasks and sub-tasks, keeping their relative weights: a tiny
    model that cannot master every task in the time it has masters fewer instead of all of them badly."""
    if not 0.0 <= think_probability <= 1.0:
        raise ValueError(f"think_probability must be in [0, 1], not {think_probability!r}")
    if think_probability and family != "diffusion_gemma":
        raise ValueError("thinking is a DiffusionGemma feature; LLaDA-2 mixtures take think_probability=0")
    tasks = tuple(t for t in TASKS if focus is None or t in focus)
    task = rng.choices(tasks, weights=[MIXTURE_WEIGHTS[t] for t in tasks])[0]
    think = rng.random() < think_probability
    subtask = rng.choice(focus[task]) if focus is not None else None
    return sample(rng, task, split, family=family, think=think, subtask=subtask)


def heldout_examples(task: str, n: int, *, family: str, seed: int = 0, think: bool = False) -> list[Example]:
    """A fixed evaluation sample: the same `seed` gives the same prompts for both families (only the chat
    answers name the family) and with or without thinking."""
    rng = random.Random(stable_hash("heldout_examples", task, seed))
    return [sample(rng, task, "heldout", family=family, think=think) for _ in range(n)]


def is_correct(example: Example, content: str) -> bool:
    """Exact match of the answer content (reasoning excluded), ignoring surrounding whitespace."""
    return content.strip() == example.answer.strip()
