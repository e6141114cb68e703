"""How many prompt tokens one encoder pass takes, for both families.

A long prompt is encoded in passes ("chunks") against the growing prefix cache. Inside a pass, attention
over `keys` positions costs scores of [heads, queries, keys]: MLX's CPU attention materialises them in
float32 (and its softmax a second array of that size), and a mask adds [queries, keys]. So the number of
queries per pass shrinks as the prompt grows, keeping one pass's scores near `SCORE_ELEMENTS` (256 MiB of
float32), between `MIN_CHUNK` (so a very long prompt still takes whole, efficient passes) and `MAX_CHUNK`
(beyond which a pass only costs memory: the matmuls are already large). Peak memory is then
O(prompt x chunk), not O(prompt^2).
"""

from __future__ import annotations

SCORE_ELEMENTS = 2**26
MIN_CHUNK = 128
MAX_CHUNK = 1024


def chunk_tokens(heads: int, keys: int, multiple: int = 1) -> int:
    """Queries for the next pass when it will attend to about `keys` positions, a multiple of `multiple`
    (LLaDA-2 encodes whole blocks)."""
    fitting = SCORE_ELEMENTS // max(1, heads * max(keys, 1))
    tokens = min(MAX_CHUNK, max(MIN_CHUNK, fitting))
    return max(multiple, tokens - tokens % multiple)


class Cancelled(Exception):
    """The request was cancelled between two encoder passes (the cache is then partly written)."""
