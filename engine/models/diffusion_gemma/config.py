"""DiffusionGemma's config.json (`text_config`, token ids, canvas length), checked with one line per problem."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import CheckpointError
from .. import config_checks as check

SLIDING = "sliding_attention"
FULL = "full_attention"

# Token-type ids the processor gives media placeholders (1 = image, 2 = video); everything else is text.
MEDIA_TOKEN_TYPES = (1, 2)

# Values of the released 26B-A4B checkpoint, used when a config leaves these keys out (as mlx-vlm does).
_DEFAULT_ROPE = {
    SLIDING: {"rope_type": "default", "rope_theta": 10000.0},
    FULL: {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
}
# The sizes every config must give, with the upper bound of a sane value (engine.models.config_checks).
_REQUIRED_TEXT_KEYS = {
    "vocab_size": check.MAX_VOCAB, "hidden_size": check.MAX_HIDDEN, "intermediate_size": check.MAX_INTERMEDIATE,
    "moe_intermediate_size": check.MAX_INTERMEDIATE, "num_hidden_layers": check.MAX_LAYERS,
    "num_attention_heads": check.MAX_HEADS, "num_key_value_heads": check.MAX_HEADS, "head_dim": check.MAX_HEAD_DIM,
    "num_experts": check.MAX_EXPERTS, "top_k_experts": check.MAX_EXPERTS,
}
# The released checkpoint's text_config.max_position_embeddings, for a config that leaves it out.
DEFAULT_CONTEXT = 262144


def _given(section: dict, key: str, default):
    """The value of `key`, or `default` when the key is missing or null (0 is a value, to be checked)."""
    value = section.get(key)
    return default if value is None else value


def _int_list(value, field: str = "eos_token_id") -> list[int]:
    if value is None:
        return []
    values = value if isinstance(value, (list, tuple)) else [value]
    return [check.integer(field, v, 0, check.MAX_VOCAB) for v in values]


@dataclass
class TextConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    moe_intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    num_experts: int
    top_k_experts: int
    num_global_key_value_heads: int
    global_head_dim: int
    layer_types: list[str]
    rope_parameters: dict[str, dict]
    rms_norm_eps: float = 1e-6
    sliding_window: int = 1024
    max_position_embeddings: int = DEFAULT_CONTEXT
    final_logit_softcapping: float | None = 30.0
    pad_token_id: int = 0
    use_bidirectional_attention: str | None = "vision"

    @classmethod
    def from_dict(cls, params: dict) -> "TextConfig":
        for key in _REQUIRED_TEXT_KEYS:
            if params.get(key) is None:
                raise CheckpointError(f"config.json: text_config lacks the required key {key!r}")
        sizes = {key: check.integer(f"text_config.{key}", params[key], 1, high)
                 for key, high in _REQUIRED_TEXT_KEYS.items()}
        heads = sizes["num_attention_heads"]
        check.divides("text_config.num_key_value_heads", sizes["num_key_value_heads"], "num_attention_heads", heads)
        if sizes["top_k_experts"] > sizes["num_experts"]:
            raise CheckpointError(f"config.json: text_config.top_k_experts ({sizes['top_k_experts']}) is more than "
                                  f"num_experts ({sizes['num_experts']})")
        global_kv = check.integer("text_config.num_global_key_value_heads",
                                  _given(params, "num_global_key_value_heads", sizes["num_key_value_heads"]), 1, heads)
        check.divides("text_config.num_global_key_value_heads", global_kv, "num_attention_heads", heads)
        global_head_dim = check.integer("text_config.global_head_dim",
                                        _given(params, "global_head_dim", sizes["head_dim"]), 1, check.MAX_HEAD_DIM)
        check.even("text_config.head_dim", sizes["head_dim"])
        check.even("text_config.global_head_dim", global_head_dim)
        layers = sizes["num_hidden_layers"]
        layer_types = params.get("layer_types") or _default_layer_types(layers)
        if not isinstance(layer_types, list) or len(layer_types) != layers or \
                any(t not in (SLIDING, FULL) for t in layer_types):
            raise CheckpointError(
                f"config.json: text_config.layer_types must list {layers} entries of {SLIDING!r} / {FULL!r}"
            )
        bidirectional = params.get("use_bidirectional_attention", "vision")
        if bidirectional not in (None, "vision"):
            raise CheckpointError(f"use_bidirectional_attention={bidirectional!r} is not supported (only 'vision')")
        softcap = params.get("final_logit_softcapping", 30.0)
        vocab = sizes["vocab_size"]
        rope = params.get("rope_parameters") or {}
        if not isinstance(rope, dict):
            raise CheckpointError("config.json: text_config.rope_parameters must be an object")
        rope_parameters = {kind: rope.get(kind) or _DEFAULT_ROPE[kind] for kind in (SLIDING, FULL)}
        for kind, values in rope_parameters.items():
            if not isinstance(values, dict):
                raise CheckpointError(f"config.json: text_config.rope_parameters.{kind} must be an object")
            check.number(f"text_config.rope_parameters.{kind}.rope_theta", values.get("rope_theta", 10000.0), 0.0, 1e12)
            check.number(f"text_config.rope_parameters.{kind}.partial_rotary_factor",
                         values.get("partial_rotary_factor", 1.0), 0.0, 1.0)
        return cls(
            **sizes,
            num_global_key_value_heads=global_kv,
            global_head_dim=global_head_dim,
            layer_types=list(layer_types),
            rope_parameters={kind: dict(values) for kind, values in rope_parameters.items()},
            rms_norm_eps=check.number("text_config.rms_norm_eps", params.get("rms_norm_eps", 1e-6), 0.0, 1.0),
            sliding_window=check.integer("text_config.sliding_window", _given(params, "sliding_window", 1024), 1,
                                         check.MAX_POSITIONS),
            max_position_embeddings=check.integer(
                "text_config.max_position_embeddings", _given(params, "max_position_embeddings", DEFAULT_CONTEXT), 1,
                check.MAX_POSITIONS),
            final_logit_softcapping=check.number("text_config.final_logit_softcapping", softcap, 0.0, 1e6)
            if softcap else None,
            pad_token_id=check.token_id("text_config.pad_token_id", _given(params, "pad_token_id", 0), vocab),
            use_bidirectional_attention=bidirectional,
        )


def _default_layer_types(num_layers: int) -> list[str]:
    """Five sliding layers then one full, repeated; the last layer is always full (Gemma 4's layout)."""
    types = [FULL if (i + 1) % 6 == 0 else SLIDING for i in range(num_layers)]
    if types:
        types[-1] = FULL
    return types


@dataclass
class ModelConfig:
    text_config: TextConfig
    canvas_length: int = 256
    eos_token_ids: list[int] = field(default_factory=lambda: [1])
    boi_token_id: int | None = None
    eoi_token_id: int | None = None
    image_token_id: int | None = None
    video_token_id: int | None = None
    vision_config: dict | None = None   # kept raw: the vision tower (engine/models/gemma4_vision.py) reads it

    @classmethod
    def from_dict(cls, config: dict) -> "ModelConfig":
        text = config.get("text_config")
        if not isinstance(text, dict):
            raise CheckpointError("config.json has no text_config section; is this a DiffusionGemma checkpoint?")
        text_config = TextConfig.from_dict(text)
        vocab = text_config.vocab_size
        eos = _int_list(config.get("eos_token_id")) or _int_list(text.get("eos_token_id")) or [1]

        def optional_id(key: str) -> int | None:
            return None if config.get(key) is None else check.token_id(key, config[key], vocab)

        vision = config.get("vision_config")
        return cls(
            text_config=text_config,
            canvas_length=check.integer("canvas_length", _given(config, "canvas_length", 256), 1, check.MAX_CANVAS),
            eos_token_ids=eos,
            boi_token_id=optional_id("boi_token_id"),
            eoi_token_id=optional_id("eoi_token_id"),
            image_token_id=optional_id("image_token_id"),
            video_token_id=optional_id("video_token_id"),
            vision_config=dict(vision) if isinstance(vision, dict) else None,
        )
