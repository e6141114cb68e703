"""How far the composed training data alone carries the thanks choice, with no network: a bag of character
n-grams and a logistic regression, fitted on prompts composed from the training templates and scored on the
hand-written panels and the held-out templates, with the LLaDA-2 demo's question (thanks, or not).

    python -m scripts.demo.ngram_baseline [--n 400] [--seed 5]

If this line of a few thousand weights gets the panels' thanks right where the demo does not, the data holds what
the panels ask and the demo's network has not learnt it; if it misses them too, the data lacks them.
Prints one JSON object: for each prompt set, the accuracy per intent and the prompts missed.
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib

import torch

from . import chat_compose
from .panel_prompts import PANELS

DIMS = 1 << 16
ORDERS = (2, 3, 4, 5)


def ngram_vector(text: str, dims: int = DIMS) -> torch.Tensor:
    """Counts of the lower-cased text's character n-grams (with a space at each end), hashed by CRC-32 into
    `dims` buckets and scaled to unit length, so a long prompt weighs as much as a short one."""
    padded = f" {text.lower()} "
    vector = torch.zeros(dims)
    for order in ORDERS:
        for start in range(len(padded) - order + 1):
            vector[zlib.crc32(padded[start:start + order].encode()) % dims] += 1
    return vector / vector.norm().clamp_min(1e-6)


def as_rows(asked: dict[str, tuple[str, ...]]) -> tuple[torch.Tensor, torch.Tensor, list[tuple[str, str]]]:
    """Features [N, DIMS], thanks labels [N] and (intent, prompt) of every prompt in `asked`."""
    pairs = [(intent, prompt) for intent, prompts in asked.items() for prompt in prompts]
    features = torch.stack([ngram_vector(prompt) for _, prompt in pairs])
    labels = torch.tensor([float(intent == "thanks") for intent, _ in pairs])
    return features, labels, pairs


def fit(features: torch.Tensor, labels: torch.Tensor, steps: int = 300, lr: float = 0.05,
        decay: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights and bias of a logistic regression of labels on features (Adam, full batch, L2 `decay`)."""
    weights = torch.zeros(features.shape[1], requires_grad=True)
    bias = torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.Adam([weights, bias], lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        logits = features @ weights + bias
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels) + decay * weights.square().sum()
        loss.backward()
        optimizer.step()
    return weights.detach(), bias.detach()


def score(weights: torch.Tensor, bias: torch.Tensor, asked: dict[str, tuple[str, ...]]) -> dict:
    """Accuracy per intent (thanks is right when called thanks, any other intent when not) and the misses."""
    features, labels, pairs = as_rows(asked)
    called = (features @ weights + bias) > 0
    right = called == labels.bool()
    accuracy = {}
    for intent in asked:
        rows = [i for i, (name, _) in enumerate(pairs) if name == intent]
        accuracy[intent] = round(sum(bool(right[i]) for i in rows) / len(rows), 3)
    missed = [{"intent": intent, "prompt": prompt} for (intent, prompt), ok in zip(pairs, right) if not ok]
    return {"accuracy": accuracy, "missed": missed}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=400, help="training-template prompts per intent fitted on "
                        "(default: 400)")
    parser.add_argument("--seed", type=int, default=5, help="seed of the prompts fitted on (default: 5)")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be at least 1")
    torch.manual_seed(0)
    weights, bias = fit(*as_rows(chat_compose.composed_prompts(args.n, args.seed, "train"))[:2])
    sets = {"train (another seed)": chat_compose.composed_prompts(100, args.seed + 12, "train"),
            "held-out templates": chat_compose.composed_prompts(60, args.seed + 4, "heldout"),
            **{f"panel {name}": prompts for name, prompts in PANELS.items()}}
    print(json.dumps({"fitted_on": {"n": args.n, "seed": args.seed},
                      **{name: score(weights, bias, asked) for name, asked in sets.items()}},
                     indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
