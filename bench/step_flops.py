"""Matrix FLOPs of one DiffusionGemma denoising step, from the text config alone (pure: no MLX, no weights).

A step is one decoder pass over the canvas with a self-conditioning signal (every step after a block's first):
the soft embedding softmax(z) @ E, the self-conditioning MLP, per layer the attention projections, the
attention products against prefix + canvas keys, the dense MLP, the router and the active experts, then the
tied LM head. Element-wise work (norms, softmax, RoPE, GELU) is left out: the bound is what the BLAS must do.
A multiply-add counts as 2 FLOPs.
"""

from __future__ import annotations

FULL = "full_attention"


def layer_types(text: dict) -> list[str]:
    kinds = text.get("layer_types")
    if kinds:
        return list(kinds)
    raise ValueError("text config has no layer_types")


def step_flops(text: dict, canvas: int, prefix: int, self_conditioning: bool = True) -> dict[str, int]:
    """FLOPs by part for one decoder pass of `canvas` positions after `prefix` cached positions."""
    h, vocab, inter = text["hidden_size"], text["vocab_size"], text["intermediate_size"]
    heads, top_k, moe = text["num_attention_heads"], text["top_k_experts"], text["moe_intermediate_size"]
    window = text.get("sliding_window") or prefix
    mm = 2 * canvas  # FLOPs per weight element for `canvas` rows
    parts = {"soft_embedding": 0, "self_conditioning_mlp": 0, "attention_projections": 0, "attention_products": 0,
             "dense_mlp": 0, "router": 0, "experts_active": 0, "lm_head": mm * h * vocab}
    if self_conditioning:
        parts["soft_embedding"] = mm * vocab * h
        parts["self_conditioning_mlp"] = mm * 3 * h * inter
    for kind in layer_types(text):
        full = kind == FULL
        d = text["global_head_dim"] if full else text["head_dim"]
        kv_heads = text["num_global_key_value_heads"] if full else text["num_key_value_heads"]
        # Full layers take values from the key projection (no v_proj).
        projections = heads * d + kv_heads * d * (1 if full else 2) + heads * d
        parts["attention_projections"] += mm * h * projections
        keys = canvas + (prefix if full else min(prefix, window - 1))  # the decoder's sliding cache holds window - 1
        parts["attention_products"] += 2 * 2 * heads * canvas * keys * d  # Q K^T and P V
        parts["dense_mlp"] += mm * 3 * h * inter
        parts["router"] += mm * h * text["num_experts"]
        parts["experts_active"] += mm * top_k * 3 * h * moe  # gate_up (2 * moe) and down (moe) per active expert
    parts["total"] = sum(parts.values())
    return parts


def mean_step_flops(text: dict, canvas: int, prompt: int, blocks: int) -> int:
    """The average step's FLOPs over `blocks` full-canvas blocks (each block's prefix holds the ones before)."""
    return round(sum(step_flops(text, canvas, prompt + b * canvas)["total"] for b in range(blocks)) / blocks)
