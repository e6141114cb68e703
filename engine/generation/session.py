"""Prefix reuse across the turns of one conversation.

A `Session` keeps the encoder cache and the token ids it holds. On the next turn, the longest common
prefix of the cached ids and the new prompt is kept (the cache is trimmed back to it) and only the rest
of the prompt is encoded.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Sequence

# An image's token run in a prompt: (start, end, digest of its pixels).
ImageRun = tuple[int, int, str]


class Session:
    def __init__(self):
        self.cache = None
        self.ids: list[int] = []
        self.images: list[ImageRun] = []
        self.family: str | None = None

    def reset(self) -> None:
        self.cache, self.ids, self.images, self.family = None, [], [], None

    @contextmanager
    def writing_cache(self):
        """Around a write to the cache (the prompt's encoder pass): if it fails, forget the cache, since a
        half-written one must never be reused."""
        try:
            yield
        except BaseException:
            self.reset()
            raise

    def remember(self, cache, ids: Sequence[int], family: str, images: Sequence[ImageRun] = ()) -> None:
        """Record what `cache` holds. Called as soon as the prompt is encoded, so a generation that fails
        later still leaves the session consistent (anything the cache holds beyond `ids` is trimmed)."""
        self.cache, self.ids, self.images, self.family = cache, list(ids), list(images), family

    def forked(self) -> Session:
        """A new session that starts from what this one caches (the cache copied, its arrays shared), so a
        second line of turns over the same conversation reuses the common prefix without disturbing this one."""
        fork = Session()
        if self.cache is not None:
            fork.remember(self.cache.copy(), self.ids, self.family, self.images)
        return fork

    def reusable_prefix(self, prompt_ids: Sequence[int], family: str, align: int = 1,
                        images: Sequence[ImageRun] = ()) -> int:
        """How many leading prompt tokens can be served from the cache.

        `align` rounds down to whole blocks (LLaDA-2 caches whole blocks). `images` are the prompt's image
        runs: the kept prefix never ends inside one (a run is encoded bidirectionally, as a whole), and it
        stops before a run whose pixels differ from the cached image at that place — every image of one
        size expands to the same placeholder ids, so the ids alone cannot tell two images apart.
        """
        if self.cache is None or self.family != family:
            return 0
        common = 0
        for a, b in zip(self.ids, prompt_ids):
            if a != b:
                break
            common += 1
        common = min(common, len(prompt_ids) - 1)  # always encode at least one new token
        common = min(common, self.cache.offset)     # never more than the cache really holds
        for start, end, digest in images:
            if start < common and ((start, end, digest) not in self.images or end > common):
                common = start
        return max(common - common % align, 0)
