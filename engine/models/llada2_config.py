"""LLaDA-2's config.json: one dataclass, every value checked with one line naming the field."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..errors import CheckpointError
from . import config_checks as check

DEFAULT_BLOCK_LENGTH = 32
# Real LLaDA2 config.json files carry neither id; these are the values every implementation hard-codes.
DEFAULT_MASK_TOKEN_ID = 156895
DEFAULT_PAD_TOKEN_ID = 156892
# LLaDA2.0-mini's max_position_embeddings, for a config that leaves it out.
DEFAULT_CONTEXT = 32768

# Bounds of a sane value for every numeric config.json field (engine.models.config_checks).
_INTEGERS = {
    "vocab_size": (1, check.MAX_VOCAB), "hidden_size": (1, check.MAX_HIDDEN),
    "intermediate_size": (1, check.MAX_INTERMEDIATE), "num_hidden_layers": (1, check.MAX_LAYERS),
    "num_attention_heads": (1, check.MAX_HEADS), "num_key_value_heads": (1, check.MAX_HEADS),
    "head_dim": (1, check.MAX_HEAD_DIM), "rotary_dim": (0, check.MAX_HEAD_DIM), "num_experts": (0, check.MAX_EXPERTS),
    "num_shared_experts": (0, check.MAX_EXPERTS), "num_experts_per_tok": (1, check.MAX_EXPERTS),
    "moe_intermediate_size": (1, check.MAX_INTERMEDIATE), "n_group": (1, check.MAX_EXPERTS),
    "topk_group": (1, check.MAX_EXPERTS), "first_k_dense_replace": (0, check.MAX_LAYERS),
    "pad_token_id": (0, check.MAX_VOCAB), "mask_token_id": (0, check.MAX_VOCAB),
    "max_position_embeddings": (1, check.MAX_POSITIONS),
}
_NUMBERS = {"partial_rotary_factor": (0.0, 1.0), "rope_theta": (0.0, 1e12), "rms_norm_eps": (0.0, 1.0),
            "routed_scaling_factor": (0.0, 1e6)}
_FLAGS = ("use_qk_norm", "use_qkv_bias", "use_bias", "tie_word_embeddings")


@dataclass
class ModelConfig:
    """config.json of a LLaDA2 checkpoint. Missing keys take LLaDA2.0-mini's values, never the HF config
    class defaults (those are generic placeholders, e.g. 16 experts and rms eps 1e-5)."""

    model_type: str = "llada2_moe"
    vocab_size: int = 157184
    hidden_size: int = 2048
    intermediate_size: int = 5120
    num_hidden_layers: int = 20
    num_attention_heads: int = 16
    num_key_value_heads: int = 4
    head_dim: int | None = None
    partial_rotary_factor: float = 0.5
    rotary_dim: int | None = None
    rope_theta: float = 600000.0
    rms_norm_eps: float = 1e-6
    use_qk_norm: bool = True
    use_qkv_bias: bool = False
    use_bias: bool = False
    tie_word_embeddings: bool = False
    num_experts: int | None = 256
    num_shared_experts: int = 1
    num_experts_per_tok: int = 8
    moe_intermediate_size: int = 512
    n_group: int = 8
    topk_group: int = 4
    routed_scaling_factor: float = 2.5
    first_k_dense_replace: int = 1
    score_function: str = "sigmoid"
    max_position_embeddings: int = DEFAULT_CONTEXT
    pad_token_id: int = DEFAULT_PAD_TOKEN_ID
    mask_token_id: int = DEFAULT_MASK_TOKEN_ID
    eos_token_ids: tuple[int, ...] = field(default_factory=tuple)

    @classmethod
    def from_dict(cls, config: dict) -> "ModelConfig":
        known = {f.name for f in fields(cls)} - {"eos_token_ids"}
        values = {k: v for k, v in config.items() if k in known and v is not None}
        # transformers-5 style configs nest the rope values
        rope = config.get("rope_parameters") or {}
        for key in ("rope_theta", "partial_rotary_factor"):
            if key not in values and rope.get(key) is not None:
                values[key] = rope[key]
        out = cls(**_checked(values))
        if out.head_dim is None:
            out.head_dim = check.integer("head_dim (hidden_size / num_attention_heads)",
                                         out.hidden_size // out.num_attention_heads, 1, check.MAX_HEAD_DIM)
        if out.rotary_dim is None:
            out.rotary_dim = int(out.head_dim * out.partial_rotary_factor)
        eos = config.get("eos_token_id")
        if eos is None:
            eos = out.pad_token_id  # released configs have no eos: the pad token <|endoftext|> ends a reply
        out.eos_token_ids = tuple(check.integer("eos_token_id", e, 0, check.MAX_VOCAB)
                                  for e in (eos if isinstance(eos, (list, tuple)) else [eos]))
        out._check()
        return out

    @property
    def has_moe(self) -> bool:
        return bool(self.num_experts)

    def _check(self) -> None:
        """The fields' relations (each field alone was checked by `_checked`)."""
        if self.score_function != "sigmoid":
            raise CheckpointError(
                f"llada2_moe router score_function {self.score_function!r} is not supported (only 'sigmoid')"
            )
        check.divides("num_key_value_heads", self.num_key_value_heads, "num_attention_heads", self.num_attention_heads)
        if self.rotary_dim > self.head_dim:
            raise CheckpointError(
                f"config.json: rotary_dim ({self.rotary_dim}) is more than head_dim ({self.head_dim})")
        check.even("rotary_dim", self.rotary_dim)
        if self.first_k_dense_replace > self.num_hidden_layers:
            raise CheckpointError(f"config.json: first_k_dense_replace ({self.first_k_dense_replace}) is more than "
                                  f"num_hidden_layers ({self.num_hidden_layers})")
        for name in ("pad_token_id", "mask_token_id"):
            check.token_id(name, getattr(self, name), self.vocab_size)
        if self.has_moe:
            if self.num_experts % self.n_group:
                raise CheckpointError(
                    f"llada2_moe config: num_experts ({self.num_experts}) is not divisible by n_group ({self.n_group})"
                )
            if self.topk_group > self.n_group:
                raise CheckpointError(
                    f"config.json: topk_group ({self.topk_group}) is more than n_group ({self.n_group})")
            # The router picks its experts among the kept groups only.
            selectable = self.topk_group * (self.num_experts // self.n_group)
            if self.num_experts_per_tok > selectable:
                raise CheckpointError(
                    f"config.json: num_experts_per_tok ({self.num_experts_per_tok}) is more than the "
                    f"{selectable} experts its topk_group ({self.topk_group}) of n_group ({self.n_group}) groups hold")


def _checked(values: dict) -> dict:
    """config.json values of known fields, each within its sane bounds (named in the error)."""
    out = dict(values)
    for name, value in values.items():
        if name in _INTEGERS:
            out[name] = check.integer(name, value, *_INTEGERS[name])
        elif name in _NUMBERS:
            out[name] = check.number(name, value, *_NUMBERS[name])
        elif name in _FLAGS:
            out[name] = check.flag(name, value)
        elif name in ("model_type", "score_function") and not isinstance(value, str):
            raise CheckpointError(f"config.json: {name} must be a string")
    return out
