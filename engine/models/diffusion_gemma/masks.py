"""Encoder attention masks as pure functions, so the vision path and tests can reason about them directly."""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from .config import MEDIA_TOKEN_TYPES


def media_run_ids(token_type_ids) -> np.ndarray | None:
    """int32 [T] on the host: k on the tokens of the k-th contiguous run of media tokens (k >= 1), 0 on text;
    None when the prompt has no media.

    DiffusionGemma's encoder lets each image (and each video frame: boi/eoi are text tokens, so every frame is
    its own run) attend bidirectionally within itself. The runs are known on the host so a chunked encoder can
    keep every run inside one pass."""
    types = np.asarray(token_type_ids).reshape(-1)
    is_media = np.isin(types, MEDIA_TOKEN_TYPES)
    if not is_media.any():
        return None
    starts = is_media & ~np.concatenate([[False], is_media[:-1]])
    return np.where(is_media, np.cumsum(starts), 0).astype(np.int32)


def run_block(run_ids: np.ndarray | None) -> mx.array | None:
    """[n, n] bool over n tokens: True where query and key belong to the same media run; None if no media."""
    if run_ids is None or not run_ids.any():
        return None
    runs = mx.array(run_ids)
    return (runs[:, None] == runs[None, :]) & (runs[:, None] > 0)


def image_run_mask(token_type_ids) -> mx.array | None:
    """[T, T] bool: the media-run block of a whole prompt, OR-ed onto the causal mask (None if no media)."""
    return run_block(media_run_ids(np.array(token_type_ids)))


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


def chunk_end(begin: int, length: int, chunk: int, run_ids: np.ndarray | None = None) -> int:
    """Where the encoder pass starting at new token `begin` (of `length`) ends: `chunk` tokens on, except that
    a pass that would end inside a media run grows to the end of that run (a run is bidirectional, so it is
    encoded in one pass)."""
    end = min(begin + chunk, length)
    if run_ids is not None and end < length and run_ids[end - 1] and run_ids[end] == run_ids[end - 1]:
        rest = run_ids[end:] != run_ids[end - 1]
        end = end + int(np.argmax(rest)) if rest.any() else length
    return end
