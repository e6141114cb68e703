"""Bundle a trained demo checkpoint into the app: copy (or quantize) it, measure it, write its model card.

    python -m scripts.demo.bundle --run RUN_FOLDER --dest tui/demo/NAME [--bits 8] [--n 50]

Runs with the engine's environment (.venv). RUN_FOLDER is what scripts/demo/train.py wrote (`model/` is the
exported Hugging Face layout, `log.jsonl` the training log). The checkpoint is evaluated where it lands (so a
quantized one is measured quantized) on the curriculum's held-out split; the tasks it answers with at least
`--bar` accuracy are the ones it claims. DEST gets:

- the checkpoint files (Hugging Face layout, or the mlx-community quantized layout with `--bits`);
- `demo.json`: what the app shows (title, one-line summary of the claimed tasks, three example prompts the
  model answered correctly in this evaluation);
- `README.md`: the model card (tasks, training command and time, data recipe, measured accuracy, limits);
- `eval.json`: the full evaluation (bench/eval_demo.py's format); `training-log.jsonl`: the run's log.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import engine  # noqa: E402  (first: OpenBLAS before MLX)
from bench.eval_demo import evaluate  # noqa: E402
from scripts.demo import tasks_arithmetic  # noqa: E402
from scripts.demo.curriculum import TASKS  # noqa: E402
from scripts.demo.demo_config import demo_checkpoint_config  # noqa: E402
from scripts.demo.word_pieces import reading_of_checkpoint  # noqa: E402

TITLES = {"diffusion_gemma": "DiffusionGemma demo", "llada2_moe": "LLaDA-2 demo"}
# The prompt the README's quick start and the bar use; shown first when the model gets it right.
SHOWCASE = ("What is 47 + 385?", tasks_arithmetic.answer("add", 47, 385))
TASK_WORDS = {"arithmetic": "arithmetic", "sorting": "sorting", "words": "spelling & reversing words",
              "repeat": "repeating", "counting": "counting",
              "chat": "greetings and questions about itself"}


def training_summary(run: Path) -> dict:
    rows = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines() if line.strip()]
    losses = [r for r in rows if "loss" in r]
    if not losses:
        return {"steps": 0, "hours": 0.0, "final_loss": None}
    # A phase stopped by a signal logs the step it saved at ("stopped_at"), past its last loss line.
    steps = max(max(r.get("step", 0), r.get("stopped_at", 0)) for r in rows)
    return {"steps": steps, "final_loss": losses[-1]["loss"], "hours": training_hours(losses)}


def loss_text(loss: float | None) -> str:
    """The card's final loss: the trainer logs it rounded to 4 decimals, so a logged 0.0 means below 0.00005."""
    if loss is None:
        return "not logged"
    return "< 0.0001 (rounded to 0 in the log)" if loss == 0 else str(loss)


IDLE_GAP_S = 900   # log lines come every few minutes while a phase runs; a longer gap is time between phases


def training_hours(losses: list[dict]) -> float:
    """Wall-clock while training ran: the gaps between log lines, without those between phases (a run stopped
    for a bundle, a review, a night). Pauses for timing runs (SIGSTOP) within a phase still count."""
    times = [row["time"] for row in losses]
    return round(sum(b - a for a, b in zip(times, times[1:]) if b - a < IDLE_GAP_S) / 3600, 2)


def install(run: Path, dest: Path, bits: int | None) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    if bits:
        from scripts.demo.quantize import quantize
        quantize(run / "model", dest, bits=bits, group_size=64, keep_8bit=[])
    else:
        shutil.copytree(run / "model", dest)
    shutil.copy2(run / "log.jsonl", dest / "training-log.jsonl")   # loss (and evaluations) as training went
    # Sampler defaults are code (scripts/demo/configs.py), not a training artifact: today's, whenever the run
    # exported its model.
    family = json.loads((dest / "config.json").read_text())["model_type"]
    generation = demo_checkpoint_config(family)[1]
    (dest / "generation_config.json").write_text(json.dumps(generation, indent=2, sort_keys=True) + "\n")


def showcase_prompts(model, rows: dict, claimed: list[str]) -> list[tuple[str, str]]:
    """Three (prompt, answer) pairs the empty chat offers: the showcase sum when answered right, then held-out
    prompts answered right (short answers first: an example should answer in a few seconds)."""
    finished = list(engine.generate(model, messages=[{"role": "user", "content": SHOWCASE[0]}]))[-1]
    return pick_examples(rows, claimed, [SHOWCASE] if finished.content.strip() == SHOWCASE[1] else [])


def pick_examples(rows: dict, claimed: list[str], pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`pairs` filled up to three from the evaluation's rows (bench/eval_demo.py's, with correct_prompts)."""
    pairs = list(pairs)
    # One per claimed task, then more of the claimed tasks, then the most accurate others: every example is one
    # the model answered right in this evaluation.
    def right(task, limit):
        # Distinct prompts (held-out phrasings repeat), those with distinct answers first: an example each of
        # several intents; then, where intents share an answer (small talk's about-me one), the shortest others.
        distinct, more, seen, answers = [], [], set(), set()
        for prompt, answer in sorted(rows[task].get("correct_prompts", []), key=lambda pair: len(pair[1])):
            if len(prompt) <= 48 and prompt not in seen:
                (more if answer in answers else distinct).append((prompt, answer))
                seen.add(prompt)
                answers.add(answer)
        return (distinct + sorted(more, key=lambda pair: len(pair[0])))[:limit]

    others = sorted((t for t in rows if t.split(" ")[0] not in claimed), key=lambda t: -rows[t]["accuracy"])
    passes = [right(t, 1) for t in claimed] + [right(t, 3) for t in claimed] + [right(t, 3) for t in others]
    for pair in (pair for batch in passes for pair in batch):
        if len(pairs) < 3 and pair[0] not in [p for p, _ in pairs]:
            pairs.append(pair)
    return pairs[:3]


def summary_of(claimed: list[str], rows: dict, trained_last: list[str], bar: float) -> str:
    """The picker's line: what the demo answers, or, below the bar everywhere, its best task and how well."""
    if claimed:
        return "trained tiny model · answers " + ", ".join(TASK_WORDS[t] for t in claimed)
    best = max(trained_last, key=lambda t: rows[t]["accuracy"])
    return (f"trained tiny model · {TASK_WORDS[best]} only, {rows[best]['accuracy']:.0%} right on held-out prompts "
            f"(below its {bar:.0%} bar)")


def size_line(config: dict, parameters: int) -> str:
    """The card's size, read from the checkpoint itself (the LLaDA-2 demo was grown from 6 layers to 8)."""
    text = config.get("text_config", config)
    top_k = text.get("num_experts_per_tok") or text.get("top_k_experts")
    return (f"hidden {text['hidden_size']}, {text['num_hidden_layers']} layers, {text['num_experts']} experts "
            f"top-{top_k}, about {parameters / 1e6:.1f} M parameters")


def parameter_count(weights: Path) -> int:
    """Elements in an unquantized safetensors file (the run's export, before any quantization)."""
    from safetensors import safe_open

    with safe_open(str(weights), framework="numpy") as file:
        return sum(math.prod(file.get_slice(name).get_shape()) for name in file.keys())


def tokenizer_text(folder: Path) -> str:
    """How the card describes the tokenizer in `folder`: character level, with word pieces for prompts if any."""
    merges, lowercase = reading_of_checkpoint(folder)
    if not merges and not lowercase:
        return "a character-level tokenizer"
    reads = ("lower-cased, " if lowercase else "") + (f"with {len(merges)} word pieces learnt from the training "
                                                      "prompts" if merges else "")
    return (f"a character-level tokenizer that reads prompts {reads.rstrip(', ')} (answers are written one character "
            "a token, in either case: scripts/demo/word_pieces.py)")


def model_card(family: str, dest: Path, claimed: list[str], rows: dict, training: dict, bits: int | None,
               n: int, command: str, size: str, tokenizer: str = "a character-level tokenizer") -> str:
    title = TITLES[family]
    table = ["| task | held-out accuracy | steps per block | tokens/s (2 cores) | claimed |", "|---|---|---|---|---|"]
    for name, row in rows.items():
        subtasks = ", ".join(f"{k} {v:.0%}" for k, v in row["subtasks"].items())
        table.append(f"| {name} ({subtasks}) | {row['accuracy']:.0%} of {row['n']} | {row['steps_per_block']} | "
                     f"{row['tokens_per_s']} | {'yes' if name.split(' ')[0] in claimed else 'no'} |")
    layout = (f"the mlx-community quantized layout ({bits}-bit affine, group size 64)" if bits
              else "the Hugging Face layout (float32 safetensors)")
    unclaimed = [t for t in TASKS if t not in claimed]
    return f"""# {title}

A tiny {family} checkpoint ({size}) trained from scratch on
this repository's synthetic curriculum, so that diffusion-chat has a model that answers something offline. It
is not a language model in any general sense: outside its tasks it produces fluent-looking nonsense.

Stored in {layout}, with {tokenizer} and a chat template written in the family's real format.

## Tasks it answers (held-out accuracy ≥ 90 %)
{", ".join(claimed) if claimed else "none yet"}.{f" Trained on but not claimed (below the bar): {', '.join(unclaimed)}." if unclaimed else ""}

## Measured accuracy
Held-out prompts (numbers, words and phrasings never seen in training; how many per task in the table), default
sampler settings, exact match of the answer (`python bench/eval_demo.py --model {dest.as_posix()} --n {n}`):

{chr(10).join(table)}

## Training
{command} — {training['steps']} steps in all, {training['hours']} h wall-clock on 2 shared CPU cores (PyTorch
trainer, parity-tested against the engine's forward: tests/test_demo_parity.py), final loss
{loss_text(training['final_loss'])}. Objective: {"uniform-state renoising of a 32-token canvas with self-conditioning, encoder on the clean prefix" if family == "diffusion_gemma" else "masked block diffusion (block-causal, `<|mask|>` at a sampled ratio)"}.

## Data recipe
Generated by `scripts/demo/curriculum.py` (no downloaded data): arithmetic (+ − × up to 3 digits), sorting up to
8 numbers or words, reversing/spelling words and counting letters, repeating text, counting sequences that span
several blocks, and a few conversational turns; many phrasings per task, with held-out phrasings, words and number
tuples. Words come from `scripts/demo/words.txt` (written for this project).

## Limits
Answers only the tasks above, in the curriculum's formats; long or unusual prompts, other languages and images
are out of reach. Accuracy is what the table says, not more.
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a scripts/demo/train.py run folder")
    parser.add_argument("--dest", type=Path, required=True, help="the bundled folder to (re)write")
    parser.add_argument("--bits", type=int, choices=(4, 8), help="store quantized (mlx-community layout)")
    parser.add_argument("--n", type=int, default=50, help="held-out prompts per task")
    parser.add_argument("--tasks", nargs="*", default=list(TASKS), choices=TASKS,
                        help="tasks measured with --n prompts (the ones trained last); the others get --n-other")
    parser.add_argument("--n-other", type=int, default=8, help="held-out prompts for each other task")
    parser.add_argument("--bar", type=float, default=0.9, help="accuracy a task needs to be claimed")
    parser.add_argument("--command", default="", help="the training command(s), Markdown, for the model card")
    args = parser.parse_args(argv)
    install(args.run, args.dest, args.bits)
    model = engine.load(str(args.dest))
    rows = evaluate(model, args.n, seed=0, tasks=tuple(args.tasks), keep_correct=True)
    others = tuple(t for t in TASKS if t not in args.tasks)
    if others and args.n_other:
        rows |= evaluate(model, args.n_other, seed=0, tasks=others, keep_correct=True)
    rows = {name: rows[name] for name in sorted(rows, key=lambda name: TASKS.index(name.split(" ")[0]))}
    claimed = [t for t in args.tasks if rows[t]["accuracy"] >= args.bar
               and (t != "arithmetic" or model.family != "diffusion_gemma"
                    or rows["arithmetic (thinking)"]["accuracy"] >= args.bar)]
    examples = showcase_prompts(model, rows, claimed)
    for row in rows.values():
        row.pop("correct_prompts", None)
    summary = summary_of(claimed, rows, args.tasks, args.bar)
    # The answers are the model's own, recorded here: tests/test_demo_accuracy.py checks it still gives them.
    demo = {"title": TITLES[model.family], "family": model.family, "summary": summary, "tasks": claimed,
            "examples": [prompt for prompt, _ in examples], "example_answers": [answer for _, answer in examples]}
    (args.dest / "demo.json").write_text(json.dumps(demo, indent=1) + "\n", encoding="utf-8")
    (args.dest / "eval.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    command = args.command or f"`python -m scripts.demo.train --family {model.family} --out runs/{model.family}`"
    shown = args.dest.resolve()
    shown = shown.relative_to(REPO) if shown.is_relative_to(REPO) else shown
    size = size_line(json.loads((args.dest / "config.json").read_text()),
                     parameter_count(args.run / "model" / "model.safetensors"))
    card = model_card(model.family, shown, claimed, rows, training_summary(args.run), args.bits, args.n, command,
                      size, tokenizer_text(args.dest))
    (args.dest / "README.md").write_text(card, encoding="utf-8")
    print(json.dumps(demo))
    return 0


if __name__ == "__main__":
    sys.exit(main())
