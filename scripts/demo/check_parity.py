"""Write the PyTorch side of the torch <-> engine parity fixtures (tests/test_demo_parity.py reads them).

    /work/trainenv/bin/python -m scripts.demo.check_parity [--out tests/fixtures/demo_parity]

Per family: a small random network (hidden 64, both layer kinds, 4 experts top-2, the fixture tokenizer's
vocabulary) with every norm weight, layer scalar, router scale and expert bias moved away from its default
(a default of 1 or 0 would hide a missing multiply), rounded to bfloat16 so the bfloat16 export is exact
and the fixtures stay small; exported with `export.export_checkpoint` plus the fixture's tokenizer files;
and `parity.npz` with the inputs and the torch logits. The engine side replays the same inputs through
inference calls (prefill / denoise / commit for both families).

Seeds are skipped (a) when their inputs bring two router scores within ROUTING_MARGIN of each other:
float32 rounding differs between PyTorch and MLX, and a near tie could flip an expert choice on one side
only; (b) when the float32 logits are more than NOISE_FLOOR from the same network run in float64: such a
network is so ill-conditioned that rounding alone, not the implementation, would decide a 1e-4 test.
"""

from __future__ import annotations

import argparse
import copy
import math
import shutil
from pathlib import Path

import numpy as np
import torch

from .export import config_for, export_checkpoint
from .torch_common import RMSNorm, rms_norm
from .torch_dg import FULL, SLIDING, DiffusionGemma, Router, training_layout
from .torch_llada2 import Gate, LLaDA2Moe, training_masks

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINTS = ROOT / "tests" / "fixtures" / "checkpoints"
ROUTING_MARGIN = 2e-5
NOISE_FLOOR = 2.5e-5     # a quarter of the test's tolerance (tests/test_demo_parity.py ATOL = 1e-4)
TEMPERATURE = 0.8        # processed logits = logits / TEMPERATURE feed self-conditioning
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")

DG_CASE = {"prompt": 6, "canvas": 8, "window": 8, "block_prompts": [5, 11], "block_counts": [3, 2]}
LLADA_CASE = {"block_length": 8, "prompts": [11, 5], "lengths": [32, 27]}


def dg_config() -> dict:
    return config_for("diffusion_gemma", vocab_size=512, hidden_size=64, intermediate_size=64,
                      moe_intermediate_size=32, num_hidden_layers=3, layer_types=[SLIDING, FULL, SLIDING],
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_global_key_value_heads=1,
                      global_head_dim=32, num_experts=4, top_k_experts=2, sliding_window=DG_CASE["window"],
                      canvas_length=DG_CASE["canvas"], eos_token_id=[1, 106, 50])


def llada_config() -> dict:
    # The fixture tokenizer's ids (tests/fixtures/checkpoints/llada2).
    return config_for("llada2_moe", vocab_size=512, hidden_size=64, intermediate_size=128,
                      moe_intermediate_size=32, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                      head_dim=16, rotary_dim=8, num_experts=4, num_experts_per_tok=2, n_group=2, topk_group=1,
                      first_k_dense_replace=1, mask_token_id=495, pad_token_id=492)


def randomize(model: torch.nn.Module, generator: torch.Generator) -> None:
    """Non-trivial random weights, rounded to bfloat16.

    q/k norm weights stay below 1: with DiffusionGemma's attention scale of 1 they set the softmax
    temperature, and above 1 attention gets so sharp that float32 rounding alone moves logits by ~1e-4.
    Embedding rows have std 0.3 (x sqrt(H) = 8 gives ~2.4 RMS, about what a trained Gemma's give)."""
    norms = {id(m.weight) for m in model.modules() if isinstance(m, RMSNorm)}
    qk_norms = {id(m.weight) for name, m in model.named_modules()
                if name.endswith(("q_norm", "k_norm", "query_layernorm", "key_layernorm"))}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if id(p) in qk_norms:
                p.copy_(torch.empty_like(p).uniform_(0.3, 0.8, generator=generator))
            elif id(p) in norms or name.endswith(("layer_scalar", "router.scale", "per_expert_scale")):
                p.copy_(torch.empty_like(p).uniform_(0.5, 1.5, generator=generator))
            elif name.endswith("expert_bias"):
                p.copy_(torch.randn(p.shape, generator=generator) * 0.2)   # sigmoid scores are in (0, 1)
            else:  # projections: unit-variance outputs
                scale = 0.3 if "embed" in name else 1.0 / math.sqrt(p.shape[-1])
                p.copy_(torch.randn(p.shape, generator=generator) * scale)
            p.copy_(p.to(torch.bfloat16).float())


def routing_margins(model: torch.nn.Module) -> tuple[list[float], callable]:
    """Forward hooks that record the smallest gap between a chosen and an unchosen routing score."""
    margins: list[float] = []

    def gap(values: torch.Tensor, k: int) -> float:
        ranked = values.sort(dim=-1, descending=True).values
        return float((ranked[..., k - 1] - ranked[..., k]).min())

    def on_router(module: Router, inputs, _):
        scores = module.proj(rms_norm(inputs[0], None, module.eps) * module.scale * module.input_scale)
        margins.append(gap(scores, module.top_k))

    def on_gate(module: Gate, inputs, _):
        choice = torch.sigmoid(inputs[0].float() @ module.weight.T) + module.expert_bias
        grouped = choice.view(*choice.shape[:-1], module.n_group, -1)
        group_scores = grouped.topk(min(2, grouped.shape[-1]), dim=-1).values.sum(-1)
        margins.append(gap(group_scores, module.topk_group))
        keep = group_scores.topk(module.topk_group, dim=-1).indices
        kept = grouped.gather(-2, keep[..., None].expand(*keep.shape, grouped.shape[-1])).flatten(-2)
        if kept.shape[-1] > module.top_k:
            margins.append(gap(kept, module.top_k))

    handles = [m.register_forward_hook(on_router if isinstance(m, Router) else on_gate)
               for m in model.modules() if isinstance(m, (Router, Gate))]
    return margins, lambda: [h.remove() for h in handles]


def dg_outputs(model: DiffusionGemma, rng: np.random.Generator) -> dict:
    c, vocab = DG_CASE, model.sizes.vocab
    out = {"temperature": np.float32(TEMPERATURE)}
    # One canvas after a prompt shorter than the window: prefill + denoise, with and without a signal.
    prompt = rng.integers(0, vocab, c["prompt"])
    canvas = rng.integers(0, vocab, c["canvas"])
    p, n = len(prompt), len(canvas)
    causal = torch.ones(p, p, dtype=torch.bool).tril()[None, None]
    kv = model.encode(torch.tensor(prompt)[None], torch.arange(p), {SLIDING: causal, FULL: causal})
    everything = {SLIDING: None, FULL: None}   # the engine's denoise: no mask at all
    logits = model.decode(torch.tensor(canvas)[None], torch.arange(p, p + n), kv, everything)
    sc = model.decode(torch.tensor(canvas)[None], torch.arange(p, p + n), kv, everything,
                      self_conditioning=logits / TEMPERATURE)
    out.update(single_prompt=prompt, single_canvas=canvas, single_logits=logits[0].numpy(),
               single_sc_logits=sc[0].numpy())
    # Block-parallel training forward: two rows with different prompt lengths, several canvases each,
    # sequences longer than the sliding window.
    layout = training_layout(c["block_prompts"], c["block_counts"], c["canvas"], model.sizes.window)
    clean = torch.tensor(rng.integers(0, vocab, layout.positions.shape))
    noise = torch.tensor(rng.integers(0, vocab, layout.positions.shape))
    keep = torch.tensor(rng.random(layout.positions.shape) < 0.4)
    noisy = torch.where(layout.canvas & ~keep, noise, clean)
    block = model.training_logits(clean, noisy, layout)
    block_sc = model.training_logits(clean, noisy, layout, self_conditioning=block / TEMPERATURE)
    out.update(block_prompts=np.array(c["block_prompts"]), block_counts=np.array(c["block_counts"]),
               block_clean=clean.numpy(), block_noisy=noisy.numpy(),
               block_logits=block[layout.canvas].numpy(), block_sc_logits=block_sc[layout.canvas].numpy())
    return out


def llada_outputs(model: LLaDA2Moe, rng: np.random.Generator) -> dict:
    c, vocab, mask_id = LLADA_CASE, model.sizes.vocab, model.config["mask_token_id"]
    masks = training_masks(c["lengths"], c["block_length"])
    clean = torch.tensor(rng.integers(0, vocab, masks.positions.shape))
    prompt = masks.positions < torch.tensor(c["prompts"])[:, None]
    hidden = torch.tensor(rng.random(masks.positions.shape) < 0.6) & ~prompt & masks.valid
    noisy = torch.where(hidden, mask_id, clean)
    logits = model.training_logits(clean, noisy, masks)
    # The engine denoises the blocks from the one holding the prompt's end; it compares those.
    first = torch.tensor([p // c["block_length"] * c["block_length"] for p in c["prompts"]])[:, None]
    compared = masks.valid & (masks.positions >= first)
    return {"block_length": np.int64(c["block_length"]), "prompts": np.array(c["prompts"]),
            "lengths": np.array(c["lengths"]), "clean": clean.numpy(), "noisy": noisy.numpy(),
            "logits": logits[compared].numpy()}


def build(family: str, out: Path, seed: int) -> dict:
    make, outputs, config, fixture = {
        "diffusion_gemma": (DiffusionGemma, dg_outputs, dg_config(), "dg_text"),
        "llada2_moe": (LLaDA2Moe, llada_outputs, llada_config(), "llada2"),
    }[family]
    for attempt in range(seed, seed + 50):
        torch.manual_seed(attempt)
        model = make(config).eval()
        randomize(model, torch.Generator().manual_seed(attempt))
        margins, unhook = routing_margins(model)
        with torch.no_grad():
            arrays = outputs(model, np.random.default_rng(attempt))
            unhook()
            exact = outputs(copy.deepcopy(model).double(), np.random.default_rng(attempt))
        noise = max(float(np.abs(arrays[k] - exact[k]).max()) for k in arrays if k.endswith("logits"))
        if min(margins) > ROUTING_MARGIN and noise <= NOISE_FLOOR:
            break
    else:
        raise RuntimeError("no seed without a near tie in routing")
    folder = out / family
    if folder.exists():
        shutil.rmtree(folder)
    export_checkpoint(model, folder, family, config, dtype="bfloat16")
    for name in TOKENIZER_FILES:
        if (CHECKPOINTS / fixture / name).exists():
            shutil.copy(CHECKPOINTS / fixture / name, folder / name)
    np.savez(folder / "parity.npz", **arrays)
    return {"family": family, "seed": attempt, "min_routing_margin": min(margins), "float32_vs_float64": noise,
            "bytes": sum(f.stat().st_size for f in folder.iterdir())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "demo_parity")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for family in ("diffusion_gemma", "llada2_moe"):
        print(build(family, args.out, args.seed))


if __name__ == "__main__":
    main()
