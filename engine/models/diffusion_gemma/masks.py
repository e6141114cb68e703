"""Encoder attention masks as pure functions, so the vision path and tests can reason about them directly."""

from __future__ import annotations

import mlx.core as mx

from .config import MEDIA_TOKEN_TYPES

def image_run_mask(token_type_ids: mx.array) -> mx.array | None:
    """[T, T] bool: True where query and key are media tokens of the same contiguous run, None if none.

    DiffusionGemma's encoder lets each image (and each video frame: boi/eoi are text tokens, so every
    frame is its own run) attend bidirectionally within itself; this block is OR-ed onto the causal mask.
    """
    types = mx.array(token_type_ids).reshape(-1)
    is_media = mx.zeros(types.shape, dtype=mx.bool_)
    for kind in MEDIA_TOKEN_TYPES:
        is_media = is_media | (types == kind)
    if not bool(mx.any(is_media).item()):
        return None
    previous = mx.concatenate([mx.zeros((1,), dtype=mx.bool_), is_media[:-1]])
    run = mx.cumsum((is_media & ~previous).astype(mx.int32))
    run = mx.where(is_media, run, 0)
    return (run[:, None] == run[None, :]) & is_media[:, None] & is_media[None, :]


def encoder_mask(offset: int, length: int, key_start: int, window: int | None = None,
                 media_runs: mx.array | None = None):
    """Encoder attention mask for queries at positions [offset, offset+length) over keys
    [key_start, offset+length): causal, and `q - k < window` when a window is given, OR-ed with the
    media-run block over the new tokens. Returns "causal" when that is all it is (no big bool array)."""
    end = offset + length
    window_matters = window is not None and end - 1 - key_start >= window
    if media_runs is None and not window_matters:
        return "causal"
    queries = mx.arange(offset, end)[:, None]
    keys = mx.arange(key_start, end)[None, :]
    visible = keys <= queries
    if window_matters:
        visible = visible & (queries - keys < window)
    if media_runs is not None:
        before = mx.zeros((length, offset - key_start), dtype=mx.bool_)
        visible = visible | mx.concatenate([before, media_runs], axis=1)
    return visible


def sliding_key_start(offset: int, window: int) -> int:
    """First cached position a sliding layer reads. In the encoder the first new query (at `offset`)
    sees keys with q - k < window; the decoder sees the last window-1 prefix positions (HF's sliding
    cache holds window-1). Both give the same start."""
    return max(0, offset - window + 1)
