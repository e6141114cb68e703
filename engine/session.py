"""Prefix reuse across the turns of one conversation.

A `Session` keeps the encoder cache and the token ids it holds. On the next turn, the longest common
prefix of the cached ids and the new prompt is kept (the cache is trimmed back to it) and only the rest
of the prompt is encoded.
"""

from __future__ import annotations


class Session:
    def __init__(self):
        self.cache = None
        self.ids: list[int] = []
        self.family: str | None = None

    def reset(self) -> None:
        self.cache, self.ids, self.family = None, [], None

    def reusable_prefix(self, prompt_ids: list[int], family: str, align: int = 1, barriers=()) -> int:
        """How many leading prompt tokens can be served from the cache.

        `align` rounds down to whole blocks (LLaDA-2 caches whole blocks); `barriers` are positions the
        kept prefix must not end inside (e.g. (start, end) of image-token runs, which are encoded
        bidirectionally and cannot be split).
        """
        if self.cache is None or self.family != family:
            return 0
        common = 0
        for a, b in zip(self.ids, prompt_ids):
            if a != b:
                break
            common += 1
        common = min(common, len(prompt_ids) - 1)  # always encode at least one new token
        common -= common % align
        for start, end in barriers:
            if start < common < end:
                common = start - start % align
        return max(common, 0)
