"""config.json / generation_config.json builders for the demo checkpoints (no torch import, so the MLX
side of scripts/demo/compare_trainers.py and the engine's environment can use them too).

`config_for(family, ...)` gives config.json in the shape of the real checkpoints (mirroring the fixtures
tests/fixtures/checkpoints/{dg_text,llada2}/config.json), with every key the engine's
`ModelConfig.from_dict` reads.
"""

from __future__ import annotations

FAMILIES = ("diffusion_gemma", "llada2_moe")


def config_for(family: str, **sizes) -> dict:
    """config.json for `family` ("diffusion_gemma" | "llada2_moe"); keyword arguments override the small
    demo defaults below (any config key; for DiffusionGemma, text_config keys go into text_config)."""
    if family == "diffusion_gemma":
        return _dg_config(**sizes)
    if family == "llada2_moe":
        return _llada2_config(**sizes)
    raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}")


_DG_TOP_LEVEL = ("canvas_length", "eos_token_id", "boi_token_id", "eoi_token_id", "image_token_id",
                 "video_token_id")


def _dg_config(**sizes) -> dict:
    top = {key: sizes.pop(key) for key in _DG_TOP_LEVEL if key in sizes}
    layers = int(sizes.get("num_hidden_layers", 4))
    text = {
        "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 2, "dtype": "float32",
        "eos_token_id": 1, "final_logit_softcapping": 30.0, "global_head_dim": 64, "head_dim": 32,
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 128, "initializer_range": 0.02,
        "intermediate_size": 256,
        # Gemma 4's pattern (five sliding, one full) with the last layer full.
        "layer_types": ["full_attention" if (i + 1) % 6 == 0 or i == layers - 1 else "sliding_attention"
                        for i in range(layers)],
        "max_position_embeddings": 262144, "model_type": "diffusion_gemma_text", "moe_intermediate_size": 128,
        "num_attention_heads": 4, "num_experts": 4, "num_global_key_value_heads": 1, "num_hidden_layers": layers,
        "num_key_value_heads": 2, "pad_token_id": 0, "rms_norm_eps": 1e-06,
        "rope_parameters": {
            "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0, "rope_type": "proportional"},
            "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"},
        },
        "sliding_window": 512, "tie_word_embeddings": True, "top_k_experts": 2,
        "use_bidirectional_attention": "vision", "vocab_size": 384,
    }
    text.update(sizes)
    eos = top.get("eos_token_id", [text["eos_token_id"]])
    # Text-only demos: no vision tower, and no image/boi/eoi ids unless given — the engine maps the image
    # and video ids to pad in prompts, which must not hit an ordinary token of a small demo vocabulary.
    return {
        "architectures": ["DiffusionGemmaForBlockDiffusion"],
        "boi_token_id": top.get("boi_token_id"), "canvas_length": int(top.get("canvas_length", 32)),
        "dtype": "float32", "eoi_token_id": top.get("eoi_token_id"), "eos_token_id": eos,
        "image_token_id": top.get("image_token_id"), "initializer_range": 0.02, "model_type": "diffusion_gemma",
        "text_config": text, "tie_word_embeddings": True, "transformers_version": "5.24.0",
        "video_token_id": top.get("video_token_id"), "vision_config": None,
    }


def _llada2_config(**sizes) -> dict:
    config = {
        # No "auto_map": the demo folders ship no remote code (the engine never runs any anyway).
        "architectures": ["LLaDA2MoeModelLM"], "attention_dropout": 0.0, "dtype": "float32",
        "embedding_dropout": 0.0, "first_k_dense_replace": 1, "head_dim": 32, "hidden_act": "silu",
        "hidden_size": 128, "initializer_range": 0.02, "intermediate_size": 256, "mask_token_id": 3,
        "max_position_embeddings": 32768, "max_window_layers": 4, "model_type": "llada2_moe",
        "moe_intermediate_size": 128, "moe_router_enable_expert_bias": True, "n_group": 2, "norm_head": False,
        "norm_softmax": False, "norm_topk_prob": True, "num_attention_heads": 4, "num_experts": 4,
        "num_experts_per_tok": 2, "num_hidden_layers": 4, "num_key_value_heads": 2, "num_shared_experts": 1,
        "output_dropout": 0.0, "output_router_logits": False, "pad_token_id": 0, "partial_rotary_factor": 0.5,
        "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 600000, "rotary_dim": None,
        "routed_scaling_factor": 2.5, "router_dtype": "fp32", "score_function": "sigmoid", "sliding_window": 4096,
        "tie_word_embeddings": False, "topk_group": 1, "transformers_version": "4.56.0", "use_bias": False,
        "use_cache": False, "use_qk_norm": True, "use_qkv_bias": False, "use_sliding_window": False,
        "vocab_size": 384,
    }
    config.update(sizes)
    if config["rotary_dim"] is None:
        config["rotary_dim"] = int(config["head_dim"] * config["partial_rotary_factor"])
    return config


def generation_config_for(family: str, config: dict, **overrides) -> dict:
    """generation_config.json in the released shape, with ids taken from config."""
    if family == "diffusion_gemma":
        text = config["text_config"]
        out = {"bos_token_id": text.get("bos_token_id", 2), "confidence_threshold": 0.005,
               "eos_token_id": config["eos_token_id"], "max_denoising_steps": 48, "max_new_tokens": 256,
               "pad_token_id": text.get("pad_token_id", 0),
               "sampler_config": {"_cls_name": "EntropyBoundSamplerConfig", "entropy_bound": 0.1},
               "stability_threshold": 1, "t_max": 0.8, "t_min": 0.4, "transformers_version": "5.24.0"}
    elif family == "llada2_moe":
        pad = config.get("pad_token_id", 0)
        # LLaDA's pad token doubles as end of reply (<|endoftext|>), as in the released files.
        # threshold: the official generate()'s confidence bar, stricter than its 0.95 for the tiny demo, whose
        # character-level answers garble when several uncertain positions are committed in one step (bundled
        # LLaDA-2 demo, held-out small talk of 50: 0.95 -> 68 %, 0.99 -> 70 %, 0.999 -> 76 %; on the checkpoint
        # before: 34, 38, 44 %).
        out = {"bos_token_id": config.get("bos_token_id", pad), "eos_token_id": config.get("eos_token_id", pad),
               "pad_token_id": pad, "threshold": 0.999, "transformers_version": "4.56.0"}
    else:
        raise ValueError(f"unknown family {family!r}")
    if "entropy_bound" in overrides:   # the released files keep it inside sampler_config
        out["sampler_config"] = dict(out["sampler_config"], entropy_bound=overrides.pop("entropy_bound"))
    out.update(overrides)
    return out
