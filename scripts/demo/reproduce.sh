#!/usr/bin/env bash
# The commands that produced the bundled demos (tui/demo/*), phase by phase, as they were run on the 2-core
# machine (2026-12-01). Training needs PyTorch (a separate venv: pip install torch numpy tokenizers safetensors
# mlx); bundling runs in the app's venv. Every phase resumes from RUN/state.pt; --focus and --steps may change
# between phases (the learning-rate schedule follows the new --steps).
set -euo pipefail
TRAIN_PYTHON=${TRAIN_PYTHON:-python}
APP_PYTHON=${APP_PYTHON:-.venv/bin/python}
RUNS=${RUNS:-runs}
# One phase: FAMILY STEPS STOP [--focus ...] (STEPS sets the learning-rate schedule, STOP where the phase ends).
phase() {
    local family=$1 steps=$2 stop=$3
    shift 3
    nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family "$family" --out "$RUNS/$family" --steps "$steps" \
        --stop-at "$stop" --threads 1 --eval-every 100000 "$@"
}

# Same commands, not bit-identical: a resume redraws the trainer's pool of batches from the saved generator.
# DiffusionGemma: the whole curriculum to step 1250 (schedule of 8000 steps), then four tasks to 1607 (schedule
# of 2700), then chat and repeating to 1822 (of 2450), then chat alone to 2300, then chat again with the second
# batch of phrasings and fillers (scripts/demo/tasks_chat.py; earlier phases had the first batch only) to 2717
# (of 3300; the run was stopped there), then chat with one answer for "who are you" / "what can you do"
# (tasks_chat.ABOUT; earlier phases had two) to 3100 (of 3700), then chat with greetings given that answer too and
# a third batch of thanks phrasings to 3700 (of 4300), and on with the same data, on both cores, to 4100 (of 4900),
# then, on both cores, chat with a fourth batch of identity and capabilities phrasings (requests such as "Please
# introduce yourself.") to 4800 (of 5600). LLaDA-2 was not trained on the fourth batch.
phase diffusion_gemma 8000 1250
phase diffusion_gemma 2700 1607 --focus arithmetic:add,repeat,counting,chat
phase diffusion_gemma 2450 1822 --focus chat,repeat
phase diffusion_gemma 2300 2300 --focus chat
phase diffusion_gemma 3300 2717 --focus chat
phase diffusion_gemma 3700 3100 --focus chat
phase diffusion_gemma 4300 3700 --focus chat
phase diffusion_gemma 4900 4100 --focus chat --threads 2
phase diffusion_gemma 5600 "${DG_STOP:-4800}" --focus chat --threads 2

# LLaDA-2: the whole curriculum to step 1750 (schedule of 8000), then four tasks to 2250 (schedule of 3200), then
# chat and repeating to 2603 (of 3000), then chat alone to 3250, then chat with the second batch of phrasings to
# 3861 (of 4250; stopped there), then chat with the one about-me answer to 4250 (of 4800), then chat with greetings
# given that answer too and the third batch of thanks to 4850 (of 5400), and on with the same data to 5250 (of 6000).
phase llada2_moe 8000 1750
phase llada2_moe 3200 2250 --focus arithmetic:add,repeat,counting,chat
phase llada2_moe 3000 2603 --focus chat,repeat
phase llada2_moe 3250 3250 --focus chat
phase llada2_moe 4250 3861 --focus chat
phase llada2_moe 4800 4250 --focus chat
phase llada2_moe 5400 4850 --focus chat
phase llada2_moe 6000 "${LL_STOP:-5250}" --focus chat

# Into the app, measured (DiffusionGemma stored in the mlx-community 8-bit layout).
# The model cards' training line: LLaDA-2's eight phases, and DiffusionGemma's ninth on top.
phases='the whole curriculum, then addition/repeating/counting/small talk, then small talk and repeating, then small talk alone, then small talk with a second batch of phrasings, then with one answer for who-are-you and what-can-you-do, then with greetings given that answer too and more thanks, twice'
card_llada2="\`scripts/demo/reproduce.sh\` (eight phases: $phases)"
card_dg="\`scripts/demo/reproduce.sh\` (nine phases: $phases, then with a fourth batch of who-are-you and what-can-you-do phrasings)"
"$APP_PYTHON" -m scripts.demo.bundle --run "$RUNS/diffusion_gemma" --dest tui/demo/diffusion-gemma-demo --bits 8 \
    --tasks chat --n 50 --n-other 8 --command "$card_dg"
"$APP_PYTHON" -m scripts.demo.bundle --run "$RUNS/llada2_moe" --dest tui/demo/llada2-demo --tasks chat --n 50 \
    --n-other 8 --command "$card_llada2"

# Second pass (issue 26), started 2026-12-02 and NOT bundled (it had not been measured against every bar by the
# session's end): LLaDA-2 fine-tuned from the bundled weights on small talk with 70 % of its chat turns composed
# (scripts/demo/chat_compose.py: thanks and out-of-scope first), one thread in the background. DiffusionGemma's
# bundled weights are 8-bit, which --init-from refuses: its fine-tune needs the float run state or a dequantizer.
# Bundle only if bench/eval_demo.py --panel --grid beats the bundled demo on every bar (bench/README.md, demo models).
finetune_llada2() {
    nice -n 19 "$TRAIN_PYTHON" -m scripts.demo.train --family llada2_moe --out "$RUNS/llada2_finetune" \
        --init-from tui/demo/llada2-demo --steps 1500 --warmup 50 --lr 3e-4 --min-lr 5e-5 --focus chat \
        --composed-chat 0.7 --threads 1 --workers 0 --eval-every 0 --checkpoint-every 50 --log-every 10
}
