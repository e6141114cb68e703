"""Several requests' LLaDA-2 blocks through the network in one forward pass (a server's concurrent requests).

As for DiffusionGemma (engine.models.diffusion_gemma.batched): the blocks are laid end to end as the rows of
one [1, sum L, H] sequence; embeddings, norms, the fused q/k/v and output projections, the dense / shared MLPs,
the router, the routed experts and the head run once over all rows, while RoPE and attention over each
request's own prefix cache run per request on its slice. Equal to one `Network.denoise` per block up to float
rounding.
"""

from __future__ import annotations

from typing import Sequence

import mlx.core as mx


def denoise_many(network, calls: Sequence) -> list[mx.array]:
    """`[call.run(network) for call in calls]` as one forward: each call's float32 logits [1, L, V]."""
    blocks = [call.canvas if call.canvas.ndim == 2 else call.canvas[None] for call in calls]
    bounds, total = [], 0
    for block in blocks:
        bounds.append((total, total + block.shape[1]))
        total += block.shape[1]
    language = network.language_model
    model = language.model
    h = model.word_embeddings(mx.concatenate(blocks, axis=1))
    for index, layer in enumerate(model.layers):
        attention = layer.attention
        queries, keys, values = attention.project_unrotated(layer.input_layernorm(h))
        out = mx.concatenate([attention.attend(queries[:, :, begin:end], keys[:, :, begin:end],
                                               values[:, :, begin:end], call.cache[index], None, False)
                              for (begin, end), call in zip(bounds, calls)], axis=2)
        h = h + attention.dense(out.transpose(0, 2, 1, 3).reshape(1, total, -1))
        h = h + layer.mlp(layer.post_attention_layernorm(h))
    h = model.norm(h)
    head = model.word_embeddings.as_linear if language.tie_word_embeddings else language.lm_head
    logits = head(h).astype(mx.float32)
    return [logits[:, begin:end] for begin, end in bounds]
