"""Training batches made ahead of the training loop, in worker processes, on the CPU.

The stream is cut into numbered chunks; chunk i is a pure function of (seed, i): its examples, their groups
by token budget and every noise draw come from generators seeded by a stable hash of both. So any number of
workers (0 = in this process) yields the same batches in the same order, and a resumed run only needs the
position (chunk, offset) to continue exactly where it stopped, on any device.
"""

from __future__ import annotations

import functools
import multiprocessing
import random
from collections import deque
from dataclasses import dataclass

import torch

from . import batches, curriculum
from .heldout import stable_hash

CHUNK_AHEAD = 2           # chunks queued per worker beyond the one being consumed


@dataclass(frozen=True)
class FeedSpec:
    """Everything a worker needs (picklable; the tokenizer is loaded once per process from model_dir)."""
    family: str
    model_dir: str
    seed: int
    examples_per_chunk: int
    token_budget: int
    think_probability: float
    max_length: int
    focus: str
    canvas: int               # DiffusionGemma canvas length / LLaDA-2 block length
    vocab: int
    ids: dict                 # the tokenizer's special ids
    composed_chat: float = 0.0
    fully_noised: float = batches.FULLY_NOISED
    prompt_dropout: float = 0.0   # LLaDA-2 only
    thanks_share: float = 0.0
    intent_labels: float = 0.0
    bare_share: float = 0.0
    edit_noise: float = 0.0       # LLaDA-2 only
    prefix_noise: float = 0.0     # DiffusionGemma only


@dataclass
class Prepared:
    """One batch, noised, still on the CPU; `coin` / `temperature` are the self-conditioning draws."""
    batch: object             # batches.DGBatch | batches.LLaDABatch
    coin: float
    temperature: float


@functools.lru_cache(maxsize=2)
def _tokenizer(model_dir: str, family: str):
    from .tokenizers import load_tokenizer

    return load_tokenizer(model_dir, family)


def make_chunk(spec: FeedSpec, index: int) -> list[Prepared]:
    rng = random.Random(stable_hash("feed", spec.seed, index))
    generator = torch.Generator().manual_seed(stable_hash("feed-noise", spec.seed, index) % 2 ** 62)
    focus = curriculum.parse_focus(spec.focus) if spec.focus else None
    examples = batches.encoded_examples(rng, _tokenizer(spec.model_dir, spec.family), spec.family,
                                        spec.examples_per_chunk, spec.think_probability, spec.max_length, focus,
                                        spec.composed_chat, spec.thanks_share, spec.intent_labels,
                                        spec.bare_share)
    if spec.family == "diffusion_gemma":
        groups = batches.by_budget(examples, lambda e: batches.dg_length(e, spec.canvas), spec.token_budget, rng)
        made = [batches.dg_batch(g, spec.canvas, spec.vocab, spec.ids["pad"], generator, spec.fully_noised,
                                  spec.prefix_noise)
                for g in groups]
    else:
        groups = batches.by_budget(examples, lambda e: batches.llada_length(e, spec.canvas), spec.token_budget, rng)
        roles = (spec.ids["role_close"], spec.ids["role_end"])
        made = [batches.llada_batch(g, spec.canvas, spec.ids["eos"], spec.ids["mask"], generator,
                                    spec.fully_noised, spec.prompt_dropout, roles, spec.edit_noise, spec.vocab)
                for g in groups]
    draws = torch.rand((len(made), 2), generator=generator)
    return [Prepared(batch, float(coin), 0.4 + 0.4 * float(u)) for batch, (coin, u) in zip(made, draws)]


def _worker_start() -> None:
    torch.set_num_threads(1)   # the workers share the CPU with the training loop


class Feed:
    """Iterates Prepared batches from (chunk, offset); `position` is what a checkpoint saves."""

    def __init__(self, spec: FeedSpec, workers: int = 0, chunk: int = 0, offset: int = 0):
        self.spec, self.chunk, self.offset = spec, chunk, offset
        # spawn, not fork: forking a process that already runs torch's thread pools (or CUDA) can hang.
        self.pool = multiprocessing.get_context("spawn").Pool(workers, initializer=_worker_start) \
            if workers > 0 else None
        self.pending: deque = deque()
        self.ahead = (workers * CHUNK_AHEAD) if workers else 0
        self.next_to_queue = chunk
        self.current: list[Prepared] = []

    @property
    def position(self) -> tuple[int, int]:
        return self.chunk, self.offset

    def _queue(self) -> None:
        while self.pool is not None and len(self.pending) < self.ahead:
            self.pending.append(self.pool.apply_async(make_chunk, (self.spec, self.next_to_queue)))
            self.next_to_queue += 1

    def _load(self, index: int) -> list[Prepared]:
        if self.pool is None:
            return make_chunk(self.spec, index)
        self._queue()
        return self.pending.popleft().get()

    def next(self) -> Prepared:
        while not self.current or self.offset >= len(self.current):
            if self.current:
                self.chunk, self.offset = self.chunk + 1, 0
            self.current = self._load(self.chunk)
        prepared = self.current[self.offset]
        self.offset += 1
        if self.offset >= len(self.current):
            self.chunk, self.offset, self.current = self.chunk + 1, 0, []
        self._queue()
        return prepared

    def close(self) -> None:
        """Let the workers finish the chunks queued ahead (well under a second each), then stop them. Not
        `terminate()`: with results still pending it races CPython's result-handler thread and, under load,
        raises "Cannot have cache with result_hander not alive" before it has stopped the workers."""
        if self.pool is not None:
            self.pool.close()
            self.pool.join()
            self.pool = None
