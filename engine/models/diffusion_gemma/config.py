"""DiffusionGemma's config.json (`text_config`, token ids, canvas length), checked with one line per problem."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import CheckpointError

SLIDING = "sliding_attention"
FULL = "full_attention"

# Token-type ids the processor gives media placeholders (1 = image, 2 = video); everything else is text.
MEDIA_TOKEN_TYPES = (1, 2)

# Values of the released 26B-A4B checkpoint, used when a config leaves these keys out (as mlx-vlm does).
_DEFAULT_ROPE = {
    SLIDING: {"rope_type": "default", "rope_theta": 10000.0},
    FULL: {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
}
_REQUIRED_TEXT_KEYS = (
    "vocab_size", "hidden_size", "intermediate_size", "moe_intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "num_experts", "top_k_experts",
)


def _int_list(value) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in (value if isinstance(value, (list, tuple)) else [value])]


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
    final_logit_softcapping: float | None = 30.0
    pad_token_id: int = 0
    use_bidirectional_attention: str | None = "vision"

    @classmethod
    def from_dict(cls, params: dict) -> "TextConfig":
        for key in _REQUIRED_TEXT_KEYS:
            if params.get(key) is None:
                raise CheckpointError(f"config.json: text_config lacks the required key {key!r}")
        try:
            sizes = {key: int(params[key]) for key in _REQUIRED_TEXT_KEYS}
        except (TypeError, ValueError):
            raise CheckpointError("config.json: text_config sizes must be integers")
        layers = sizes["num_hidden_layers"]
        layer_types = params.get("layer_types") or _default_layer_types(layers)
        if len(layer_types) != layers or any(t not in (SLIDING, FULL) for t in layer_types):
            raise CheckpointError(
                f"config.json: layer_types must list {layers} entries of {SLIDING!r} / {FULL!r}"
            )
        bidirectional = params.get("use_bidirectional_attention", "vision")
        if bidirectional not in (None, "vision"):
            raise CheckpointError(f"use_bidirectional_attention={bidirectional!r} is not supported (only 'vision')")
        softcap = params.get("final_logit_softcapping", 30.0)
        return cls(
            **sizes,
            num_global_key_value_heads=int(params.get("num_global_key_value_heads") or sizes["num_key_value_heads"]),
            global_head_dim=int(params.get("global_head_dim") or sizes["head_dim"]),
            layer_types=list(layer_types),
            rope_parameters={kind: dict((params.get("rope_parameters") or {}).get(kind) or _DEFAULT_ROPE[kind])
                             for kind in (SLIDING, FULL)},
            rms_norm_eps=float(params.get("rms_norm_eps", 1e-6)),
            sliding_window=int(params.get("sliding_window") or 1024),
            final_logit_softcapping=float(softcap) if softcap else None,
            pad_token_id=int(params.get("pad_token_id") or 0),
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
        eos = _int_list(config.get("eos_token_id")) or _int_list(text.get("eos_token_id")) or [1]

        def optional_id(key: str) -> int | None:
            return None if config.get(key) is None else int(config[key])

        vision = config.get("vision_config")
        return cls(
            text_config=text_config,
            canvas_length=int(config.get("canvas_length") or 256),
            eos_token_ids=eos,
            boi_token_id=optional_id("boi_token_id"),
            eoi_token_id=optional_id("eoi_token_id"),
            image_token_id=optional_id("image_token_id"),
            video_token_id=optional_id("video_token_id"),
            vision_config=dict(vision) if isinstance(vision, dict) else None,
        )
