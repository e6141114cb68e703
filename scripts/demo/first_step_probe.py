"""Which fixed line a LLaDA-2 demo chooses at the sampler's first step, when its whole first answer block is masked.

    python -m scripts.demo.first_step_probe --model runs/llada2_ft/model [--split train] [--n 50] [--seed 0]
    python -m scripts.demo.first_step_probe --model tui/demo/llada2-demo --panel
    python -m scripts.demo.first_step_probe --model tui/demo/llada2-demo --parts [--closer " for the help"]

The demo answers small talk with one of two fixed lines (thanks -> the thanks line, anything else -> the about
line), and which one is settled at the first step: every later step sees answer tokens of the line already
chosen. Here the prompt is followed by `<|mask|>` to the end of the block that holds the answer's first token, one
block-causal forward (as the engine's block step), and each line is scored by its log-likelihood over those
positions. `--split train` asks prompts composed from the training templates (scripts/demo/chat_compose.py), so
the accuracy is how well training fitted the choice, not how it generalises; the answer text and the sampler are
left out of it, which is why it can see what a training loss (one deciding token in ~45) hides.
Prints one JSON object: accuracy per intent and overall, how well the thanks-minus-about margin separates thanks
from the rest (`separation`), the missed prompts with their margins, and the accuracy by how many answer positions
the first block holds (`by_held`: the prompt's tail takes the rest of it, so a short one decides on a few).
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from pathlib import Path

import torch

from . import chat_compose, chat_compounds
from .batches import first_block_end
from .panel_prompts import PANELS
from .tasks_chat import chat_answer
from .tokenizers import load_tokenizer
from .torch_llada2 import training_masks
from .word_pieces import spell

BLOCK = 32   # the demo's block length (generation_config.json), as the trainer's


def line_scores(logits: torch.Tensor, prompt_length: int, lines: list[list[int]], fill: int) -> list[float]:
    """Log-likelihood of each line's ids (then `fill`, the end-of-text the sampler writes after an answer) at
    positions prompt_length .. len(logits) - 1 of one row's logits [T, V]."""
    logprobs = torch.log_softmax(logits[prompt_length:].double(), dim=-1)
    width = logprobs.shape[0]
    scores = []
    for ids in lines:
        padded = (ids + [fill] * width)[:width]
        scores.append(float(logprobs[torch.arange(width), torch.tensor(padded)].sum()))
    return scores


def masked_first_block(prompt: list[int], mask_id: int, block: int = BLOCK):
    """The ids [1, T] of the prompt then `<|mask|>` to the end of the block holding the answer's first token, and
    their block-causal training masks: what the sampler's first step reads."""
    end = first_block_end(len(prompt), block)
    return torch.tensor([prompt + [mask_id] * (end - len(prompt))]), training_masks([end], block)


def first_block_scores(model, prompt: list[int], lines: list[list[int]], mask_id: int, eos: int,
                       block: int = BLOCK) -> list[float]:
    """Each line's log-likelihood by `model` (the trainer's LLaDA2Moe, or anything called as it is) on the
    prompt's first answer block, all masked."""
    ids, masks = masked_first_block(prompt, mask_id, block)
    with torch.no_grad():
        logits = model(ids, masks.positions, masks.clean)[0]
    return line_scores(logits, len(prompt), lines, eos)


def choose_line(model, prompt: list[int], lines: list[list[int]], mask_id: int, eos: int, block: int = BLOCK) -> int:
    """The index of the line `model` scores highest on the prompt's first answer block, all masked."""
    scores = first_block_scores(model, prompt, lines, mask_id, eos, block)
    return max(range(len(lines)), key=scores.__getitem__)


def separation(margins: list[tuple[bool, float]]) -> dict:
    """How well the thanks-minus-about margin tells thanks (True) from the rest, apart from where the line
    between them falls: the area under the ROC curve (1 = every thanks prompt above every other one), and the
    best accuracy any threshold would give, with that threshold (nats). The model's own threshold is 0; a
    high AUC with a best threshold far from 0 is a bias more training can move, a low AUC a ranking it lacks."""
    thanks = [m for is_thanks, m in margins if is_thanks]
    others = [m for is_thanks, m in margins if not is_thanks]
    if not thanks or not others:
        raise ValueError("the margins need thanks prompts and other prompts")
    auc = sum((t > o) + 0.5 * (t == o) for t in thanks for o in others) / (len(thanks) * len(others))
    # A threshold just below each margin (and above them all): thanks is "margin >= threshold".
    candidates = sorted({m for _, m in margins}) + [float("inf")]
    best_accuracy, best_threshold = max(
        (sum((m >= threshold) == is_thanks for is_thanks, m in margins) / len(margins), -abs(threshold), threshold)
        for threshold in candidates)[0::2]
    return {"auc": round(auc, 3), "best_accuracy": round(best_accuracy, 3), "best_threshold": round(best_threshold, 2)}


def with_closer(asked: dict[str, tuple[str, ...]], closer: str) -> dict[str, tuple[str, ...]]:
    """Each prompt with its own closer (trailing spaces, "!" and emoji) taken off and `closer` put on instead, to
    see what a closer alone does to the choice."""
    def bare(prompt: str) -> str:
        end = len(prompt)
        while end and (prompt[end - 1] in " !\ufe0f" or unicodedata.category(prompt[end - 1]) == "So"):
            end -= 1
        return prompt[:end] or prompt

    return {intent: tuple(bare(p) + closer for p in prompts) for intent, prompts in asked.items()}


def prompts_for(split: str, n: int, seed: int, panel: str | None = None, parts: bool = False
                ) -> dict[str, tuple[str, ...]]:
    """{intent: prompts}: hand-written panel `panel` when one is named, the words that say each intent alone
    when `parts`, else composed from `split`'s templates."""
    if parts:
        return intent_words()
    return PANELS[panel] if panel else chat_compose.composed_prompts(n, seed, split)


def intent_words() -> dict[str, tuple[str, ...]]:
    """{intent: the training parts that say it, each alone}: a greeting's leads, another intent's cores
    (chat_compounds.PARTS), to see whether the words carry the choice or the leads and tails around them do."""
    return {intent: tuple(dict.fromkeys(chat_compounds.carrier(intent))) for intent in chat_compounds.PARTS}


def load_model(folder: Path):
    from .dequantize import as_network_names, load_float_weights
    from .torch_llada2 import LLaDA2Moe

    config = json.loads((folder / "config.json").read_text())
    if config.get("model_type") != "llada2_moe":
        raise SystemExit(f"{folder}: the probe reads LLaDA-2 demos (model_type llada2_moe), "
                         f"not {config.get('model_type')!r}")
    model = LLaDA2Moe(config)
    arrays = as_network_names(load_float_weights(folder), model.state_dict())
    model.load_state_dict({name: torch.from_numpy(value) for name, value in arrays.items()})
    return model.eval()


def answer_lines(tokenizer) -> list[list[int]]:
    """The thanks line and the about line as the demo writes them: one character a token, even where the
    tokenizer reads prompts with word pieces (scripts/demo/word_pieces.py)."""
    return [spell(chat_answer(intent, "llada2_moe"), tokenizer) for intent in ("thanks", "identity")]


def probe(model, tokenizer, asked: dict[str, tuple[str, ...]]) -> dict:
    line_ids = answer_lines(tokenizer)
    mask_id, eos = tokenizer.id_of("<|mask|>"), tokenizer.id_of("<|endoftext|>")
    per_intent, missed, right_total, margins = {}, [], 0, []
    by_held = {}   # how many answer positions the first block holds (the prompt's tail takes the rest): [right, asked]
    for intent, prompts in asked.items():
        expected = 0 if intent == "thanks" else 1
        right = 0
        for prompt in prompts:
            ids = tokenizer.encode_chat([{"role": "user", "content": prompt}], think=False)
            thanks_score, about_score = first_block_scores(model, ids, line_ids, mask_id, eos)
            margin = thanks_score - about_score
            chosen = 0 if margin >= 0 else 1   # as choose_line: a tie is thanks
            margins.append((intent == "thanks", margin))
            right += chosen == expected
            held = first_block_end(len(ids), BLOCK) - len(ids)
            tally = by_held.setdefault(held_range(held), [0, 0])
            tally[0] += chosen == expected
            tally[1] += 1
            if chosen != expected:
                missed.append({"intent": intent, "prompt": prompt, "margin": round(margin, 2), "held": held})
        per_intent[intent] = round(right / len(prompts), 3)
        right_total += right
    asked_total = sum(len(p) for p in asked.values())
    return {"accuracy": per_intent, "overall": round(right_total / asked_total, 3), "n": asked_total,
            "margin": separation(margins), "missed": missed,
            "by_held": {held: round(right / asked, 3) for held, (right, asked) in sorted(by_held.items())}}


def held_range(held: int, width: int = 8) -> str:
    """The range of `width` that `held` answer positions fall in: 1-8, 9-16, 17-24, 25-32."""
    low = (held - 1) // width * width + 1
    return f"{low:02d}-{low + width - 1:02d}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="a LLaDA-2 demo folder (bundled or exported)")
    parser.add_argument("--split", choices=("train", "heldout"), default="train",
                        help="whose composed templates the prompts come from (default: train)")
    parser.add_argument("--panel", nargs="?", const="1", choices=tuple(PANELS), metavar="SET",
                        help="a hand-written panel instead of composed prompts: 1 (default) to 15")
    parser.add_argument("--parts", action="store_true", help="each intent's own words alone (a greeting's "
                        "leads, another intent's cores: chat_compounds.PARTS) instead of composed prompts")
    parser.add_argument("--closer", metavar="TEXT", help="take each prompt's closer (trailing spaces, '!', emoji) "
                        "off and end it with TEXT instead (an empty TEXT: no closer)")
    parser.add_argument("--n", type=int, default=40, help="composed prompts per intent (default: 40)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.parts and args.panel:
        parser.error("--parts and --panel each name the prompts to ask: give one")
    if not (args.model / "config.json").is_file():
        parser.error(f"{args.model}: no config.json there (give a demo folder)")
    torch.set_num_threads(1)
    model = load_model(args.model)
    tokenizer = load_tokenizer(args.model, "llada2_moe")
    asked = prompts_for(args.split, args.n, args.seed, args.panel, args.parts)
    if args.closer is not None:
        asked = with_closer(asked, args.closer)
    result = probe(model, tokenizer, asked)
    asked_name = f"panel {args.panel}" if args.panel else "parts" if args.parts else args.split
    print(json.dumps({"model": str(args.model), "prompts": asked_name, "seed": args.seed, "closer": args.closer,
                      **result}, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
