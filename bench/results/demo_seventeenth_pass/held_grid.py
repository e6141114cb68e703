"""The seventeenth pass's one-off check (bench/README.md, "Seventeenth pass"): does the number of answer positions
the first block holds decide which panel prompts the bundled LLaDA-2 demo misses? Each prompt of panels 1 and 3 is
scored as scripts/demo/first_step_probe.py scores it, with the block grid moved so that its first answer block
holds 1, 2, 3, 4, 8, 16 or 32 positions; printed: right answers per count, and every thanks prompt (and any other
missed at some count) with its natural count and its thanks-minus-about margin at each count. Run from the
repository root with the app's venv:

    PYTHONPATH=. .venv/bin/python bench/results/demo_seventeenth_pass/held_grid.py 1 3 > held-grid.txt
"""
import sys, json, torch
from pathlib import Path
from scripts.demo.first_step_probe import load_model, line_scores
from scripts.demo.panel_prompts import PANELS
from scripts.demo.tasks_chat import chat_answer
from scripts.demo.tokenizers import load_tokenizer
torch.set_num_threads(2)
folder = Path("tui/demo/llada2-demo")
model = load_model(folder); tok = load_tokenizer(folder, "llada2_moe")
lines = [tok.encode_text(chat_answer("thanks", "llada2_moe")), tok.encode_text(chat_answer("identity", "llada2_moe"))]
mask_id, eos = tok.id_of("<|mask|>"), tok.id_of("<|endoftext|>")
B = 32
def margin(prompt, h):
    n = len(prompt); L = n + h
    s = (B - h - n) % B          # (n + s) % B == B - h
    i = torch.arange(L); blocks = (i + s) // B
    clean = (blocks[None, :] <= blocks[:, None])[None, None]
    ids = torch.tensor([prompt + [mask_id] * h])
    with torch.no_grad():
        logits = model(ids, i[None], clean)[0]
    a, b = line_scores(logits, n, lines, eos)
    return a - b
HS = [1, 2, 3, 4, 8, 16, 32]
for panel in sys.argv[1:]:
    tally = {h: [0, 0] for h in HS}; rows = []
    for intent, prompts in PANELS[panel].items():
        for p in prompts:
            ids = tok.encode_chat([{"role": "user", "content": p}], think=False)
            natural = B - len(ids) % B
            ms = [margin(ids, h) for h in HS]
            for h, m in zip(HS, ms):
                tally[h][0] += (m >= 0) == (intent == "thanks"); tally[h][1] += 1
            if intent == "thanks" or any((m >= 0) != (intent == "thanks") for m in ms):
                rows.append((intent, p, natural, [round(m, 1) for m in ms]))
    print("panel", panel, {h: f"{r}/{n}" for h, (r, n) in tally.items()})
    for r in rows: print("  ", r)
