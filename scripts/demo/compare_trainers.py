"""Time one training step (forward + backward + AdamW) in PyTorch and in MLX on the same network.

    python -m scripts.demo.compare_trainers [--family diffusion_gemma|llada2_moe|both] [--steps 3]

Why this exists: the demo checkpoints are trained with the PyTorch networks of scripts/demo/torch_*.py
rather than the engine's own MLX modules; this measures that choice. The MLX side runs the engine's modules
(engine.models.*) under `nn.value_and_grad` with the same block-parallel layout and masks; the PyTorch side
runs the parity-checked demo networks. Each side runs in its own environment (PyTorch: /work/trainenv,
MLX: the engine's venv): the parent process starts `--side torch`, which writes the initial weights (an
exported checkpoint) and the batch with its masks, then `--side mlx`, which loads both, so the two time
exactly the same work. Prints one JSON object with both times and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIZES = dict(vocab_size=384, hidden_size=128, num_hidden_layers=4, num_experts=4)
BATCH, LENGTH, BLOCK, PROMPT = 32, 128, 32, 32
TORCH_PYTHON = "/work/trainenv/bin/python"
MLX_PYTHON = str(ROOT.parent / "main" / ".venv" / "bin" / "python")


def config(family: str) -> dict:
    from .configs import config_for

    if family == "diffusion_gemma":
        return config_for(family, **SIZES, top_k_experts=2, canvas_length=BLOCK, sliding_window=64)
    return config_for(family, **SIZES, num_experts_per_tok=2, mask_token_id=3)


# ---- PyTorch side ------------------------------------------------------------------------------------------


def torch_side(family: str, workdir: Path, steps: int) -> dict:
    import numpy as np
    import torch

    from .export import export_checkpoint

    torch.manual_seed(0)
    cfg = config(family)
    rng = np.random.default_rng(0)
    clean = torch.tensor(rng.integers(4, SIZES["vocab_size"], (BATCH, LENGTH)))
    noise = torch.tensor(rng.integers(4, SIZES["vocab_size"], (BATCH, LENGTH)))
    hidden = torch.tensor(rng.random((BATCH, LENGTH)) < 0.5)
    if family == "diffusion_gemma":
        from .torch_dg import DiffusionGemma, training_layout

        model = DiffusionGemma(cfg)
        layout = training_layout([PROMPT] * BATCH, [(LENGTH - PROMPT) // BLOCK] * BATCH, BLOCK,
                                 model.sizes.window)
        noisy = torch.where(layout.canvas & hidden, noise, clean)
        weights = layout.canvas.float()
        masks = {f"encoder_{k}": v for k, v in layout.encoder_masks.items()}
        masks.update({f"decoder_{k}": v for k, v in layout.decoder_masks.items()})

        def logits():
            return model.training_logits(clean, noisy, layout)
    else:
        from .torch_llada2 import LLaDA2Moe, training_masks

        model = LLaDA2Moe(cfg)
        bd = training_masks([LENGTH] * BATCH, BLOCK)
        answer = torch.arange(LENGTH)[None] >= PROMPT
        noisy = torch.where(answer & hidden, cfg["mask_token_id"], clean)
        weights = (noisy == cfg["mask_token_id"]).float()
        masks = {"mask_clean": bd.clean, "mask_noisy": bd.noisy}

        def logits():
            return model.training_logits(clean, noisy, bd)

    export_checkpoint(model, workdir / family, family, cfg)
    np.savez(workdir / family / "batch.npz", clean=clean.numpy(), noisy=noisy.numpy(),
             weights=weights.numpy(), **{k: v.numpy() for k, v in masks.items()})
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        out = logits()
        losses = torch.nn.functional.cross_entropy(out.flatten(0, 1), clean.flatten(), reduction="none")
        loss = (losses * weights.flatten()).sum() / weights.sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.item()

    return timed(step, steps) | {"threads": torch.get_num_threads(), "torch": torch.__version__}


# ---- MLX side (the engine's modules) -----------------------------------------------------------------------


def mlx_side(family: str, workdir: Path, steps: int) -> dict:
    # engine first: it loads OpenBLAS before MLX binds its BLAS, as the app does. Imported after mlx.core,
    # MLX keeps its reference BLAS and this step measures ~6x slower.
    import engine
    from engine.cpu import switch

    engine.prepare_process()
    os.environ[switch.ENV] = "0"  # the gradient needs the whole graph in MLX: the host path off, process-wide
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim
    import numpy as np
    from engine.io.checkpoint import read_configs
    from engine.io.loader import build_network
    from engine.models.cache import LayerKV

    _, _, net = build_network(read_configs(workdir / family))
    batch = {k: mx.array(v) for k, v in np.load(workdir / family / "batch.npz").items()}
    clean, noisy, weights = batch["clean"].astype(mx.int32), batch["noisy"].astype(mx.int32), batch["weights"]

    if family == "diffusion_gemma":
        def forward(model):
            # Encoder over the clean rows (the engine's `_encode`, batched, masks instead of "causal").
            layers, scalars = model.layers, model.model.encoder.language_model.layers
            kvs = [LayerKV() for _ in layers]
            h = model._embed(clean)
            for layer, kv, scalar in zip(layers[:-1], kvs, scalars):
                h = layer(h, kv, layer_scalar=scalar.layer_scalar, offset=0, key_start=0,
                          mask=batch[f"encoder_{layer.layer_type}"], write=True)
            last = layers[-1]
            kvs[-1].update(*last.self_attn.project(last.input_layernorm(h), 0)[1:])
            # Decoder over the noisy rows against those keys (the engine's `denoise`, batched, with masks).
            h = model.model.decoder.self_conditioning(model._embed(noisy), None)
            for layer, kv in zip(layers, kvs):
                h = layer(h, kv, layer_scalar=layer.layer_scalar, offset=0, key_start=0,
                          mask=batch[f"decoder_{layer.layer_type}"], write=False)
            out = model.model.decoder.embed_tokens.as_linear(model.model.decoder.norm(h)).astype(mx.float32)
            return mx.tanh(out / 30.0) * 30.0
    else:
        class SamePositions(LayerKV):
            """The noisy copy sits at the clean copy's positions, not after them (the engine takes the RoPE
            offset from the cache)."""

            offset = 0

        def forward(model):
            lm = model.language_model
            layers = lm.model.layers
            kvs = [SamePositions() for _ in layers]
            h = lm.model.word_embeddings(clean)
            for layer, kv in zip(layers[:-1], kvs):
                h = layer(h, kv, batch["mask_clean"], commit=True)
            # The last clean layer only has to leave its keys/values (torch skips its MLP too).
            layers[-1].attention(layers[-1].input_layernorm(h), kvs[-1], batch["mask_clean"], commit=True)
            return lm(noisy, kvs, batch["mask_noisy"])

    def loss_fn(model):
        losses = nn.losses.cross_entropy(forward(model), clean, reduction="none")
        return (losses * weights).sum() / weights.sum()

    # torch's AdamW corrects the moment bias; MLX's does only when asked. The router's expert_bias is no
    # trained parameter on the torch side (requires_grad=False), so it is frozen here too.
    optimizer = optim.AdamW(learning_rate=1e-3, bias_correction=True)
    net.freeze(keys=["expert_bias"], strict=False)
    value_and_grad = nn.value_and_grad(net, loss_fn)

    def step():
        loss, grads = value_and_grad(net)
        optimizer.update(net, grads)
        mx.eval(net.parameters(), optimizer.state, loss)
        return float(loss)

    return timed(step, steps) | {"mlx": mx.__version__}


def timed(step, steps: int) -> dict:
    first = step()   # warm-up: allocations, optimizer state
    times = []
    for _ in range(steps):
        began = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - began)
    # The 2 cores are shared with other work: the fastest step is the least disturbed measurement.
    return {"step_s": round(min(times), 3), "median_s": round(statistics.median(times), 3),
            "steps_s": [round(t, 3) for t in times],
            "first_loss": round(first, 4), "last_loss": round(loss, 4)}


# ---- parent ---------------------------------------------------------------------------------------------------


def run_side(python: str, side: str, family: str, workdir: Path, steps: int) -> dict:
    command = [python, "-m", "scripts.demo.compare_trainers", "--side", side, "--family", family,
               "--workdir", str(workdir), "--steps", str(steps)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(ROOT)})
    if done.returncode:
        raise SystemExit(f"{side} side failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="both", choices=["diffusion_gemma", "llada2_moe", "both"])
    parser.add_argument("--steps", type=int, default=3, help="timed steps after one warm-up step (>= 1)")
    parser.add_argument("--side", choices=["torch", "mlx"])
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--torch-python", default=TORCH_PYTHON)
    parser.add_argument("--mlx-python", default=MLX_PYTHON)
    args = parser.parse_args()
    if args.side:
        side = torch_side if args.side == "torch" else mlx_side
        print(json.dumps(side(args.family, args.workdir, args.steps)))
        return
    families = ["diffusion_gemma", "llada2_moe"] if args.family == "both" else [args.family]
    report = {"batch": BATCH, "tokens_per_row": LENGTH, "block": BLOCK, **SIZES, "top_k": 2}
    with tempfile.TemporaryDirectory() as tmp:
        for family in families:
            torch_result = run_side(args.torch_python, "torch", family, Path(tmp), args.steps)
            mlx_result = run_side(args.mlx_python, "mlx", family, Path(tmp), args.steps)
            report[family] = {"torch": torch_result, "mlx": mlx_result,
                              "mlx_over_torch": round(mlx_result["step_s"] / torch_result["step_s"], 2),
                              "mlx_over_torch_median": round(mlx_result["median_s"] / torch_result["median_s"], 2)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    sys.exit(main())
