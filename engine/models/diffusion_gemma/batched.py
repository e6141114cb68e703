"""Several requests' canvases through the decoder in one forward pass (a server's concurrent requests).

The canvases are laid end to end as the rows of one [1, sum L, H] sequence. Everything that treats a row on its
own — embeddings, norms, the q/k/v and output projections, the dense MLP, the router, the routed experts, the
logit head — runs once over all the rows, so the matrix products get several requests' rows at a time (on the
CPU the experts see ~k·sum L/E rows each instead of ~k·L/E: where batching pays). What depends on the request
— RoPE positions, attention over its own prefix cache (of its own length), the first step's missing
self-conditioning signal — runs per request on its slice of the rows.

Equal to one `Network.denoise` per canvas up to float rounding (a matrix product may block its rows
differently when there are more of them).
"""

from __future__ import annotations

from typing import Sequence

import mlx.core as mx

from .config import FULL, SLIDING
from .masks import sliding_key_start


def denoise_many(network, calls: Sequence) -> list[mx.array]:
    """`[call.run(network) for call in calls]` as one forward: each call's float32 logits [1, L, V]. `calls` are
    engine.generation.forward.DenoiseCall (canvas [1, L], the request's cache, self_conditioning / softcap)."""
    canvases = [_row(call.canvas) for call in calls]
    lengths = [canvas.shape[1] for canvas in canvases]
    bounds = list(zip(_starts(lengths), _starts(lengths)[1:] + [sum(lengths)]))
    embeddings = network._embed(mx.concatenate(canvases, axis=1))
    h = _self_conditioned(network, embeddings, [call.options.get("self_conditioning") for call in calls], bounds)
    window = network.config.text_config.sliding_window
    offsets = [call.cache.offset for call in calls]
    starts = [{FULL: 0, SLIDING: sliding_key_start(offset, window)} for offset in offsets]
    for index, layer in enumerate(network.layers):
        attention = layer.self_attn
        queries, keys, values = attention.project_unrotated(layer.input_layernorm(h))
        outs = []
        for (begin, end), call, offset, start in zip(bounds, calls, offsets, starts):
            outs.append(attention.attend(attention.rope(queries[:, :, begin:end], offset),
                                         attention.rope(keys[:, :, begin:end], offset), values[:, :, begin:end],
                                         call.cache[index], key_start=start[layer.layer_type], mask=None,
                                         write=False))
        out = mx.concatenate(outs, axis=2)
        attended = attention.o_proj(out.transpose(0, 2, 1, 3).reshape(1, h.shape[1], -1))
        h = layer.feed_forward(h + layer.post_attention_layernorm(attended), layer.layer_scalar)
    decoder = network.model.decoder
    logits = decoder.embed_tokens.as_linear(decoder.norm(h)).astype(mx.float32)
    cap = network.config.text_config.final_logit_softcapping
    results = []
    for (begin, end), call in zip(bounds, calls):
        piece = logits[:, begin:end]
        if cap and call.options.get("softcap", True):
            piece = mx.tanh(piece / cap) * cap
        results.append(piece)
    return results


def _self_conditioned(network, embeddings: mx.array, signals: list, bounds: list[tuple[int, int]]) -> mx.array:
    """The decoder's self-conditioning input for every row: one call when every request has a signal (or none
    has), else one per request (a canvas's first step has none)."""
    mix = network.model.decoder.self_conditioning
    if all(signal is None for signal in signals):
        return mix(embeddings, None)
    soft = [None if signal is None else
            network._soft_embeddings(signal, embeddings.dtype).reshape(1, end - begin, -1)
            for signal, (begin, end) in zip(signals, bounds)]
    if all(piece is not None for piece in soft):
        return mix(embeddings, mx.concatenate(soft, axis=1))
    return mx.concatenate([mix(embeddings[:, begin:end], piece) for piece, (begin, end) in zip(soft, bounds)],
                          axis=1)


def _row(ids) -> mx.array:
    ids = mx.array(ids)
    return ids[None] if ids.ndim == 1 else ids


def _starts(lengths: list[int]) -> list[int]:
    starts, total = [], 0
    for length in lengths:
        starts.append(total)
        total += length
    return starts
