"""The trainers' noise: a share of each batch's blocks / canvases noised whole, as the sampler's first step sees them.

Before this, LLaDA-2's blocks drew t from U(0, 1) alone, so a block's answer positions were all masked about once in
their count, and the demo learned its intent from the prompt hardly ever (training-like prompts such as "great
obliged" got the about line)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from scripts.demo import batches  # noqa: E402

BLOCK, EOS, MASK, PAD, VOCAB = 32, 1, 2, 0, 50


def examples(count: int, prompt: int = 5, answer: int = 60) -> list[batches.Encoded]:
    return [batches.Encoded(list(range(10, 10 + prompt)), [7] * answer, "chat") for _ in range(count)]


def whole_blocks(batch: batches.LLaDABatch, prompt: int) -> tuple[int, int]:
    """(blocks whose answer positions are all masked, blocks with answer positions), over the batch."""
    whole = total = 0
    for row in range(batch.clean.shape[0]):
        for start in range(0, batch.lengths[row], BLOCK):
            answer = [p for p in range(start, start + BLOCK) if p >= prompt]
            total += bool(answer)
            whole += bool(answer) and all(bool(batch.masked[row, p]) for p in answer)
    return whole, total


def test_llada_blocks_are_masked_whole_at_about_the_share_asked():
    generator = torch.Generator().manual_seed(0)
    batch = batches.llada_batch(examples(400), BLOCK, EOS, MASK, generator, fully_noised=0.5)
    whole, total = whole_blocks(batch, 5)
    assert 0.42 < whole / total < 0.6
    assert not batch.masked[:, :5].any(), "a prompt position was masked"
    assert bool((batch.noisy[batch.masked] == MASK).all())


def test_without_the_share_llada_blocks_are_almost_never_masked_whole():
    generator = torch.Generator().manual_seed(0)
    batch = batches.llada_batch(examples(400), BLOCK, EOS, MASK, generator, fully_noised=0.0)
    whole, total = whole_blocks(batch, 5)
    assert whole / total < 0.1


def test_the_default_share_reaches_both_families():
    generator = torch.Generator().manual_seed(1)
    llada = batches.llada_batch(examples(300), BLOCK, EOS, MASK, generator)
    whole, total = whole_blocks(llada, 5)
    assert 0.15 < whole / total < 0.3
    dg = batches.dg_batch(examples(300, answer=BLOCK), BLOCK, VOCAB, PAD, torch.Generator().manual_seed(1))
    canvas = dg.clean[:, 5:5 + BLOCK]
    renoised_whole = (dg.noisy[:, 5:5 + BLOCK] != canvas).float().mean(dim=1) > 0.9
    assert 0.12 < renoised_whole.float().mean() < 0.3
