#!/usr/bin/env bash
# On an NVIDIA machine (not run on the 2-core development machine: its numbers are pending such a machine):
# installs MLX's CUDA backend and mlx-vlm 0.7.10 beside this project, writes a random DiffusionGemma 26B-A4B
# in the mlx-community 4-bit layout (bench/real_size.py: ~16 GB, weights drawn directly quantized), and times a
# 256-canvas denoising step for this engine and for mlx-vlm on it, one run, printing JSON (also written to
# bench/results/gpu_denoise.json), then serves it to 4 concurrent streams, batched (--max-batch 4) against
# serialized (--max-batch 1), printing JSON (bench/results/gpu_serve_concurrency.json; two servers hold the
# checkpoint at once: ~32 GB of GPU memory).
#
#   bash bench/gpu.sh [CHECKPOINT_FOLDER]      (default /tmp/dg-26b-a4b-random-4bit; reused when present)
set -euo pipefail
cd "$(dirname "$0")/.."
folder="${1:-/tmp/dg-26b-a4b-random-4bit}"
python="${PYTHON:-python3}"

"$python" -m pip install -q "mlx[cuda]" "mlx-vlm==0.7.10" -e .
if [ ! -f "$folder/model.safetensors.index.json" ]; then
    "$python" bench/real_size.py "$folder"
fi
mkdir -p bench/results
"$python" bench/bench_denoise.py --model "$folder" --skip-mid-size --skip-real-vocab \
    --steps 8 --blocks 1 --prompt-tokens 120 --compare-mlx-vlm --mlx-vlm-python "$python" \
    | tee bench/results/gpu_denoise.json
"$python" bench/bench_serve.py --concurrency 4 --model "$folder" --steps 8 --blocks 1 --reps 3 \
    | tee bench/results/gpu_serve_concurrency.json
