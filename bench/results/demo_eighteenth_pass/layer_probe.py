"""The eighteenth pass's one-off check (bench/README.md, "Eighteenth pass"): does a LLaDA-2 demo's network hold
"this is thanks" anywhere, short of its output? At each layer, a logistic regression reads the hidden states of
the prompt's first answer block (all masked, as the sampler's first step sees it: the mean over its positions and
the prompt's last token), fitted on prompts composed from the training templates (N per intent, seed 5) and
scored on the held-out templates and the four panels, thanks against the rest. Run from the repository root with
the app's venv:

    PYTHONPATH=. .venv/bin/python bench/results/demo_eighteenth_pass/layer_probe.py MODEL [N] > layer-probe.txt
"""
import sys
from pathlib import Path

import torch

from scripts.demo import chat_compose
from scripts.demo.first_step_probe import load_model, masked_first_block
from scripts.demo.panel_prompts import PANELS
from scripts.demo.tokenizers import load_tokenizer
from scripts.demo.torch_llada2 import as_positions

torch.manual_seed(0)
folder = Path(sys.argv[1])
model, tok = load_model(folder), load_tokenizer(folder, "llada2_moe")
mask_id = tok.id_of("<|mask|>")


def layer_features(prompt):
    ids = tok.encode_chat([{"role": "user", "content": prompt}], think=False)
    x, masks = masked_first_block(ids, mask_id)
    positions, h, out = as_positions(masks.positions, x), model.model.word_embeddings(x), []
    with torch.no_grad():
        for layer in model.model.layers:
            h, _ = layer(h, positions, masks.clean, None)
            out.append(torch.cat([h[0, len(ids):].mean(0), h[0, len(ids) - 1]]))
    return torch.stack(out)   # [layers, 2 * hidden]


def rows(asked):
    pairs = [(intent, p) for intent, prompts in asked.items() for p in prompts]
    return torch.stack([layer_features(p) for _, p in pairs]), torch.tensor([float(i == "thanks") for i, _ in pairs])


x_fit, y_fit = rows(chat_compose.composed_prompts(int(sys.argv[2]) if len(sys.argv) > 2 else 150, 5, "train"))
sets = {"held-out": rows(chat_compose.composed_prompts(60, 9, "heldout")),
        **{f"panel {k}": rows(prompts) for k, prompts in PANELS.items()}}
print(f"{folder}: thanks right / the rest right, by a logistic regression on each layer's hidden states")
for layer in range(x_fit.shape[1]):
    mean, std = x_fit[:, layer].mean(0), x_fit[:, layer].std(0) + 1e-6
    w, b = torch.zeros(x_fit.shape[2], requires_grad=True), torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.LBFGS([w, b], max_iter=200)

    def closure():
        optimizer.zero_grad()
        z = ((x_fit[:, layer] - mean) / std) @ w + b
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y_fit) + 1e-2 * w.square().sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    cells = []
    for name, (x, y) in [("fitted on", (x_fit, y_fit)), *sets.items()]:
        with torch.no_grad():
            called = (((x[:, layer] - mean) / std) @ w + b) > 0
        thanks = y == 1
        cells.append(f"{name} {called[thanks].float().mean():.2f}/{(~called[~thanks]).float().mean():.2f}")
    print(f"layer {layer + 1}: " + " | ".join(cells), flush=True)
