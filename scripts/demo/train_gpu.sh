#!/usr/bin/env bash
# Train both demos on one CUDA GPU from scratch on the whole curriculum (arithmetic with its column-by-column
# worked answers in the thought channel, 3-digit addition included; sorting, words, repeating, counting, small
# talk with out-of-scope prompts), within about 8 minutes of the GPU, then bundle and measure them with the same
# bundler and evaluation as the CPU runs (scripts/demo/reproduce.sh). Untested on a GPU so far: the CPU path of
# the same trainer is what tests/test_demo_trainer.py runs.
#
#   TRAIN_PYTHON=/path/to/torch-env/bin/python APP_PYTHON=.venv/bin/python scripts/demo/train_gpu.sh
#
# DG_STEPS / LL_STEPS set each family's schedule (4 minutes each is the budget); DEST=tui/demo bundles into the
# app (default: runs/gpu/bundled, for comparing with the bundled demos first: bench/eval_demo.py --panel).
set -euo pipefail
TRAIN_PYTHON=${TRAIN_PYTHON:-python}
APP_PYTHON=${APP_PYTHON:-.venv/bin/python}
RUNS=${RUNS:-runs/gpu}
DEST=${DEST:-$RUNS/bundled}
DG_STEPS=${DG_STEPS:-6000}
LL_STEPS=${LL_STEPS:-6000}
WORKERS=${WORKERS:-6}

train() {   # FAMILY STEPS: one family, 4 minutes of the GPU at most (a stop saves state.pt; rerun resumes)
    local family=$1 steps=$2
    timeout --signal=TERM 240 "$TRAIN_PYTHON" -m scripts.demo.train --family "$family" --out "$RUNS/$family" \
        --device cuda --workers "$WORKERS" --steps "$steps" --warmup 200 --eval-every 0 --checkpoint-every 500 \
        --log-every 100 || [ $? -eq 124 ]
}

began=$(date +%s)
train diffusion_gemma "$DG_STEPS"
train llada2_moe "$LL_STEPS"
echo "{\"gpu_seconds\": $(( $(date +%s) - began ))}"

card="\`scripts/demo/train_gpu.sh\` (the whole curriculum on one GPU)"
"$APP_PYTHON" -m scripts.demo.bundle --run "$RUNS/diffusion_gemma" --dest "$DEST/diffusion-gemma-demo" --bits 8 \
    --n 50 --n-other 8 --command "$card"
"$APP_PYTHON" -m scripts.demo.bundle --run "$RUNS/llada2_moe" --dest "$DEST/llada2-demo" --n 50 --n-other 8 \
    --command "$card"
for demo in diffusion-gemma-demo llada2-demo; do
    "$APP_PYTHON" bench/eval_demo.py --model "$DEST/$demo" --panel --grid > "$RUNS/panel-$demo.json"
done
