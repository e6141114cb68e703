#!/usr/bin/env bash
# The demos trained on one GPU, in two halves (scripts/demo/gpu_run.py says what each does).
#
# 1. On the GPU machine, from the repository root, with its own python3 (PyTorch; no MLX or network needed):
#        bash scripts/demo/train_gpu.sh train
#    Four runs share the GPU for TRAIN_SECONDS (default 420; at most 90 s more for start-up, export and a
#    straggler, then packing: inside one 10-minute device call, and 15 minutes of device time with the start): both
#    families on the whole curriculum from scratch (3-digit addition with column-by-column worked answers in
#    DiffusionGemma's thought channel included), and each bundled demo's small-talk fine-tune. The packs go to
#    $OUT (a device call's folder) or runs/gpu/packs. Through this workplace's device tool, one call:
#        run(command="bash scripts/demo/train_gpu.sh train", timeout_s=600)
# 2. Here, with the packs fetched into PACKS:
#        bash scripts/demo/train_gpu.sh home PACKS
#    Unpacks them into runs/gpu, bundles each run into runs/gpu/bundled (DiffusionGemma 8-bit, as the app's), measures
#    every bundle and the app's own demos on the four prompt sets of every CPU pass (bench/eval_demo.py --panel),
#    and prints, per demo, whether a run beats the bundled one (scripts/demo/compare_evals.py). Bundling one into
#    the app is then `python -m scripts.demo.bundle --run runs/gpu/NAME --dest tui/demo/DEMO ...` by hand.
set -euo pipefail
cd "$(dirname "$0")/../.."
APP_PYTHON=${APP_PYTHON:-.venv/bin/python}
RUNS=${RUNS:-runs/gpu}

measure() {   # MODEL FOLDER: the four prompt sets into FOLDER/SET.json
    local model=$1 folder=$2
    mkdir -p "$folder"
    "$APP_PYTHON" bench/eval_demo.py --model "$model" --panel 1 > "$folder/panel1.json"
    "$APP_PYTHON" bench/eval_demo.py --model "$model" --panel 2 > "$folder/panel2.json"
    "$APP_PYTHON" bench/eval_demo.py --model "$model" --panel --composed 10 --seed 7 > "$folder/composed7.json"
    "$APP_PYTHON" bench/eval_demo.py --model "$model" --panel --composed 30 --seed 11 > "$folder/composed11.json"
}

case "${1:-}" in
train)
    python3 -m scripts.demo.gpu_run train --out "${OUT:-$RUNS/packs}" --runs "$RUNS" --seconds "${TRAIN_SECONDS:-420}"
    ;;
home)
    packs=${2:?usage: train_gpu.sh home PACKS_FOLDER}
    "$APP_PYTHON" -m scripts.demo.gpu_run unpack "$packs" --runs "$RUNS"
    card="\`scripts/demo/train_gpu.sh\` (one GPU)"
    measure tui/demo/diffusion-gemma-demo "$RUNS/evals/app-diffusion-gemma-demo"
    measure tui/demo/llada2-demo "$RUNS/evals/app-llada2-demo"
    for run in dg-curriculum llada2-curriculum dg-chat llada2-chat; do
        [ -f "$RUNS/$run/model/model.safetensors" ] || { echo "$run: not in the packs"; continue; }
        case $run in
        dg-*) demo=diffusion-gemma-demo; bits=(--bits 8) ;;
        *) demo=llada2-demo; bits=() ;;
        esac
        case $run in
        *-chat) tasks=(--tasks chat) ;;
        *) tasks=() ;;
        esac
        "$APP_PYTHON" -m scripts.demo.bundle --run "$RUNS/$run" --dest "$RUNS/bundled/$run" "${bits[@]}" \
            "${tasks[@]}" --n 50 --n-other 8 --command "$card"
        measure "$RUNS/bundled/$run" "$RUNS/evals/$run"
        echo "## $run against the app's $demo"
        "$APP_PYTHON" -m scripts.demo.compare_evals "$RUNS/evals/app-$demo" "$RUNS/evals/$run"
    done
    ;;
*)
    echo "usage: train_gpu.sh train   (on the GPU machine) | train_gpu.sh home PACKS_FOLDER   (here)" >&2
    exit 2
    ;;
esac
