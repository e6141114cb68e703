"""The demo checkpoints' config.json and generation_config.json: sizes, the tokenizer's ids, sampler defaults.

Sizes are chosen for this machine's budget (2 CPU cores to train, ≤ 40 MB for both models together) and the
curriculum's needs: depth for the algorithmic tasks (carries, sorting), a small vocabulary (characters).
"""

from __future__ import annotations

from .configs import config_for, generation_config_for
from .tokenizers import special_ids, stop_ids, vocab_size

# Both families: hidden 128, 6 layers, 4 experts top-2 (about 3 M parameters, 1.5 M active per token).
SIZES = {
    "demo": dict(hidden_size=128, num_hidden_layers=6, num_experts=4),
    # LLaDA-2's demo grown by two layers (scripts/demo/deepen.py): its 6 layers plateaued at choosing the thanks
    # line for ~80 % of thanks prompts, its own training templates included.
    "deep": dict(hidden_size=128, num_hidden_layers=8, num_experts=4),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_experts=4),   # for quick checks of the trainer
    "tiny-deep": dict(hidden_size=64, num_hidden_layers=3, num_experts=4),   # "tiny" grown (tests/test_demo_deepen.py)
    # "deep" grown wider (scripts/demo/widen.py): 6 heads of the same size, 1.5 times the feed-forward width; 1.45x
    # the time an answer. Trained 800 CPU steps, it did not beat "deep" (bench/README.md, "Tenth pass").
    "wide": dict(hidden_size=192, num_hidden_layers=8, num_experts=4, num_attention_heads=6),
    "tiny-wide": dict(hidden_size=128, num_hidden_layers=2, num_experts=4, num_attention_heads=8),   # tests
}
DG_CANVAS = 32          # a short canvas: most answers fit one block, and training wastes little on padding
MAX_NEW_TOKENS = 512    # the longest curriculum answers (counting to 80 terms) need ~400
# Sampler defaults that let a user watch a block resolve. The tiny demos are so sure of their fixed answers that
# the released defaults settle a whole block at the first step. DiffusionGemma: a hot first step (t_max 1.6)
# spreads the entropy so that the bound accepts a part of the block at a time, and the schedule cools it within
# 7 steps (3.1-3.3 a block, about a quarter of the block accepted at the first). The bound is 0.5 nats, not the
# released 0.1: a prompt the demo is torn over between its two lines kept most positions below 0.1's bar, so they
# were renoised step after step and the last step's argmax mixed the lines ("Yom'retwelcDie! I'm onlya tmo"); with
# more of the surest positions kept each step the block settles on one line (bench/README.md, "Twelfth pass").
# LLaDA-2: a quota of one position a step (`steps` = the block length) with a cap of 4 (`max_transfer_per_step`):
# positions above the `threshold` 0.9 resolve 4 a step (8 steps a full block), and positions below it one a step,
# each seeing the last. Without the cap (`threshold` 1.0, `steps` 8: 4 a step whatever the confidence) a first
# block with 4 answer positions unsure between two lines committed them together ("thx so much" -> "Y'm re
# welcome!"; bench/README.md, "Ninth pass"). And LLaDA-2.1's token editing at the 2.1 code's 0.9, which the demo
# was trained for (--edit-noise): a letter it is sure is wrong ("I'm a tiey") is re-written before the block is
# committed. It fires rarely (once in 420 panel answers; bench/README.md, "Twenty-first pass"); the
# editing_threshold in generation_config.json is what turns it on.
DEMO_SAMPLING = {
    "diffusion_gemma": {"max_denoising_steps": 7, "t_max": 1.6, "t_min": 0.0, "entropy_bound": 0.5},
    "llada2_moe": {"threshold": 0.9, "steps": 32, "max_transfer_per_step": 4, "editing_threshold": 0.9},
}


def demo_checkpoint_config(family: str, size: str = "demo", merges=()) -> tuple[dict, dict]:
    """config.json and generation_config.json; `merges`: the tokenizer's word pieces (scripts/demo/word_pieces.py)."""
    sizes = dict(SIZES[size])
    ids = special_ids(family)
    if family == "diffusion_gemma":
        hidden, layers = sizes["hidden_size"], sizes["num_hidden_layers"]
        config = config_for(
            family, canvas_length=DG_CANVAS, eos_token_id=stop_ids(family), vocab_size=vocab_size(family, merges),
            hidden_size=hidden, num_hidden_layers=layers, num_experts=sizes["num_experts"], top_k_experts=2,
            head_dim=hidden // 4, global_head_dim=hidden // 2, num_attention_heads=4, num_key_value_heads=2,
            num_global_key_value_heads=1, intermediate_size=2 * hidden, moe_intermediate_size=hidden,
            # Longer than any demo conversation: the sliding layers see everything the model was trained on.
            sliding_window=1024, pad_token_id=ids["pad"], bos_token_id=ids["bos"],
        )
        generation = generation_config_for(family, config, max_new_tokens=MAX_NEW_TOKENS, **DEMO_SAMPLING[family])
    else:
        hidden, heads = sizes["hidden_size"], sizes.get("num_attention_heads", 4)
        config = config_for(
            family, vocab_size=vocab_size(family, merges), hidden_size=hidden,
            num_hidden_layers=sizes["num_hidden_layers"], num_experts=sizes["num_experts"], num_experts_per_tok=2,
            n_group=1, topk_group=1,
            head_dim=hidden // heads, num_attention_heads=heads, num_key_value_heads=heads // 2,
            intermediate_size=2 * hidden, moe_intermediate_size=hidden,
            mask_token_id=ids["mask"], pad_token_id=ids["pad"], eos_token_id=ids["eos"], bos_token_id=ids["bos"],
        )
        generation = generation_config_for(family, config, max_new_tokens=MAX_NEW_TOKENS, **DEMO_SAMPLING[family])
    return config, generation
