#!/usr/bin/env bash
# The commands that produced the bundled demos (tui/demo/*), phase by phase, as they were run on the 2-core
# machine (2026-12-01). Training needs PyTorch (a separate venv: pip install torch numpy tokenizers safetensors
# mlx); bundling runs in the app's venv. Every phase resumes from RUN/state.pt; --focus and --steps may change
# between phases (the learning-rate schedule follows the new --steps).
set -euo pipefail
TRAIN_PYTHON=${TRAIN_PYTHON:-python}
APP_PYTHON=${APP_PYTHON:-.venv/bin/python}
RUNS=${RUNS:-runs}
common=(--threads 1 --eval-every 100000)

# Same commands, not bit-identical: a resume redraws the trainer's pool of batches from the saved generator.
# DiffusionGemma: the whole curriculum to step 1250 (schedule of 8000 steps), then four tasks to 1607 (schedule
# of 2700), then chat and repeating to 1822 (of 2450), then chat alone to 2300, then chat again with the second
# batch of phrasings and fillers (scripts/demo/tasks_chat.py; earlier phases had the first batch only) to 2717
# (of 3300; the run was stopped there), then chat with one answer for "who are you" / "what can you do"
# (tasks_chat.ABOUT; earlier phases had two) to 3100 (of 3700).
nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family diffusion_gemma --out "$RUNS/diffusion_gemma" --steps 8000 --stop-at 1250 \
    "${common[@]}"
nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family diffusion_gemma --out "$RUNS/diffusion_gemma" --steps 2700 --stop-at 1607 \
    "${common[@]}" --focus arithmetic:add,repeat,counting,chat
nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family diffusion_gemma --out "$RUNS/diffusion_gemma" --steps 2450 --stop-at 1822 \
    "${common[@]}" --focus chat,repeat
nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family diffusion_gemma --out "$RUNS/diffusion_gemma" --steps 2300 \
    --stop-at 2300 "${common[@]}" --focus chat
nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family diffusion_gemma --out "$RUNS/diffusion_gemma" --steps 3300 \
    --stop-at 2717 "${common[@]}" --focus chat
nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family diffusion_gemma --out "$RUNS/diffusion_gemma" --steps 3700 \
    --stop-at "${DG_STOP:-3100}" "${common[@]}" --focus chat

# LLaDA-2: the whole curriculum to step 1750 (schedule of 8000), then four tasks to 2250 (schedule of 3200), then
# chat and repeating to 2603 (of 3000), then chat alone to 3250, then chat with the second batch of phrasings to
# 3861 (of 4250; stopped there), then chat with the one about-me answer to 4250 (of 4800).
nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family llada2_moe --out "$RUNS/llada2_moe" --steps 8000 --stop-at 1750 \
    "${common[@]}"
nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family llada2_moe --out "$RUNS/llada2_moe" --steps 3200 --stop-at 2250 \
    "${common[@]}" --focus arithmetic:add,repeat,counting,chat
nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family llada2_moe --out "$RUNS/llada2_moe" --steps 3000 --stop-at 2603 \
    "${common[@]}" --focus chat,repeat
nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family llada2_moe --out "$RUNS/llada2_moe" --steps 3250 \
    --stop-at 3250 "${common[@]}" --focus chat
nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family llada2_moe --out "$RUNS/llada2_moe" --steps 4250 \
    --stop-at 3861 "${common[@]}" --focus chat
nice -n 10 "$TRAIN_PYTHON" -m scripts.demo.train --family llada2_moe --out "$RUNS/llada2_moe" --steps 4800 \
    --stop-at "${LL_STOP:-4250}" "${common[@]}" --focus chat

# Into the app, measured (DiffusionGemma stored in the mlx-community 8-bit layout).
card='`scripts/demo/reproduce.sh` (six phases: the whole curriculum, then addition/repeating/counting/small talk, then small talk and repeating, then small talk alone, then small talk with a second batch of phrasings, then with one answer for who-are-you and what-can-you-do)'
"$APP_PYTHON" -m scripts.demo.bundle --run "$RUNS/diffusion_gemma" --dest tui/demo/diffusion-gemma-demo --bits 8 \
    --tasks chat --n 50 --n-other 8 --command "$card"
"$APP_PYTHON" -m scripts.demo.bundle --run "$RUNS/llada2_moe" --dest tui/demo/llada2-demo --tasks chat --n 50 \
    --n-other 8 --command "$card"
