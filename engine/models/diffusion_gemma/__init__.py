"""DiffusionGemma (`diffusion_gemma`): the Gemma 4 MoE transformer used as a block-diffusion denoiser.

One set of weights runs in two modes (the package's modules follow the
specification's §3-5: config, masks, modules, network):

* encoder (`prefill`, `commit`): causal attention (plus a sliding window on sliding layers) over the
  prompt or a finished block, appending keys/values to the prefix cache; layer outputs are scaled by the
  encoder's own `layer_scalar`s.
* decoder (`denoise`): a canvas of token ids, mixed with a self-conditioning signal from the previous
  step, attends bidirectionally to itself and to the cached prefix, never writing the cache; layer
  outputs are scaled by the decoder's `layer_scalar`s. Returns float32 softcapped logits.

The parameter tree matches mlx-vlm's, so MLX-converted and mlx-community (mixed 8/4-bit) checkpoints
load unchanged: `model.decoder.{embed_tokens, layers.i.*, norm, self_conditioning.*}` and
`model.encoder.language_model.layers.i.layer_scalar`.
"""

from __future__ import annotations

from .config import FULL, MEDIA_TOKEN_TYPES, SLIDING, ModelConfig, TextConfig
from .masks import encoder_mask, image_run_mask, sliding_key_start
from .network import Network, make_processor

__all__ = ["FULL", "MEDIA_TOKEN_TYPES", "SLIDING", "ModelConfig", "Network", "TextConfig", "encoder_mask",
           "image_run_mask", "make_processor", "sliding_key_start"]
