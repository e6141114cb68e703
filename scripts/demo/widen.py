"""A trained LLaDA-2 demo grown wider: a larger hidden size, more attention heads and wider feed-forward layers that
start silent, so training resumes from exactly the function the narrower model had learnt.

Where deepening (scripts/demo/deepen.py) adds layers, this adds width to every layer: the choice between the demo's
two fixed lines is read from characters, and more layers alone moved how well the demo fits its training
templates but not the hand-written prompts (bench/README.md, "Sixth pass").

Why the function is kept: the new residual dimensions start at zero and stay there until training moves them.
Every weight that writes into the residual stream (the embeddings, attention's output projection, each down
projection) is zero outside its old block, so neither a new head nor a new feed-forward unit adds anything yet;
every weight that only reads the stream (query/key/value, gate and up projections, the router, the output head)
keeps its old block and takes the target network's fresh initialisation elsewhere, so gradients reach the new
weights from the first step. RMSNorm divides by the root mean square over the hidden size, which zero dimensions
dilute by sqrt(new / old): the old norm weights are scaled by sqrt(old / new) to cancel it (exactly but for the
norm's epsilon, which is negligible next to a trained model's residual stream).
"""

from __future__ import annotations

import re

import numpy as np

# Parameters whose output is added to the residual stream: zero outside the old block.
RESIDUAL_WRITERS = ("word_embeddings.", "attention.dense.", "down_proj.")
NORMS_OVER_HIDDEN = re.compile(r"(^|\.)(input_layernorm|post_attention_layernorm|norm)\.weight$")
QKV = "attention.query_key_value.weight"


def widen(arrays: dict[str, np.ndarray], fresh: dict[str, np.ndarray], old: dict, new: dict) -> dict[str, np.ndarray]:
    """`arrays` (the narrow network's tensors under the trainer's names, sized by config `old`) laid into `fresh`
    (the wider network's initialised tensors, sized by config `new`); see the module docstring."""
    _check(old, new)
    scale = np.sqrt(old["hidden_size"] / new["hidden_size"]).astype(np.float32)
    grown = {}
    for name, target in fresh.items():
        if name not in arrays:
            raise ValueError(f"the narrow checkpoint has no {name}")
        value, out = arrays[name], np.array(target, copy=True)
        if name.endswith(QKV):
            _lay_qkv(out, value, old, new)
        elif NORMS_OVER_HIDDEN.search(name):
            out[:] = out * scale
            out[:value.shape[0]] = value * scale
        else:
            if any(writer in name for writer in RESIDUAL_WRITERS):
                out[:] = 0
            out[tuple(slice(0, size) for size in value.shape)] = value
        grown[name] = out
    return grown


def _check(old: dict, new: dict) -> None:
    head_dim = old.get("head_dim") or old["hidden_size"] // old["num_attention_heads"]
    if (new.get("head_dim") or new["hidden_size"] // new["num_attention_heads"]) != head_dim:
        raise ValueError("widening keeps the head size: add heads instead")
    group = old["num_attention_heads"] // old["num_key_value_heads"]
    if new["num_attention_heads"] // new["num_key_value_heads"] != group:
        # Query head j reads key/value head j // group: the old heads keep theirs only at the same group size.
        raise ValueError("widening keeps the query heads per key/value head")
    for key in ("hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size",
                "moe_intermediate_size"):
        if new[key] < old[key]:
            raise ValueError(f"cannot narrow {key} from {old[key]} to {new[key]}")
    for key in ("num_hidden_layers", "num_experts", "vocab_size"):
        if new[key] != old[key]:
            raise ValueError(f"widening keeps {key} ({old[key]} -> {new[key]})")


def _lay_qkv(out: np.ndarray, value: np.ndarray, old: dict, new: dict) -> None:
    """The fused projection's rows are [queries | keys | values], head after head: each old part goes to the
    start of its new part."""
    parts_old, parts_new = _qkv_head_bounds(old), _qkv_head_bounds(new)
    head_dim, hidden = value.shape[0] // parts_old[-1], value.shape[1]
    for part in range(3):
        rows = (parts_old[part + 1] - parts_old[part]) * head_dim
        start_old, start_new = parts_old[part] * head_dim, parts_new[part] * head_dim
        out[start_new:start_new + rows, :hidden] = value[start_old:start_old + rows]


def _qkv_head_bounds(config: dict) -> np.ndarray:
    """Where the queries, keys and values start and end in the fused projection, counted in heads."""
    kv = config["num_key_value_heads"]
    return np.cumsum([0, config["num_attention_heads"], kv, kv])
