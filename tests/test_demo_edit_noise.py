"""The LLaDA-2 trainer's edit noise (`--edit-noise`): wrong ids (half of them a neighbour's token) in a share of the
unmasked answer positions and the whole answer in the loss, so that LLaDA-2.1's token editing has something learnt
to go on; drawn after every other draw, so that a batch without it is what it always was."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from scripts.demo import batches  # noqa: E402
from scripts.demo.tokenizers import special_ids, vocab_size  # noqa: E402
from demo_trainer_helpers import check_llada_only_share, thanks_group, tiny_llada_first_batch  # noqa: E402


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    return thanks_group(tmp_path_factory.mktemp("tokenizer"), "llada2_moe", "You're welcome! I'm only a tiny demo.")


def batch(group, edit_noise: float) -> batches.LLaDABatch:
    ids = special_ids("llada2_moe")
    return batches.llada_batch(group, 32, ids["eos"], ids["mask"], torch.Generator().manual_seed(5),
                               edit_noise=edit_noise, vocab=vocab_size("llada2_moe"))


def answer_positions(group, length: int) -> torch.Tensor:
    at = torch.zeros((len(group), length), dtype=torch.bool)
    for row, example in enumerate(group):
        at[row, len(example.prompt):batches.llada_length(example, 32)] = True
    return at


def test_edit_noise_swaps_only_unmasked_answer_positions_and_puts_the_whole_answer_in_the_loss(group):
    plain, edited = batch(group, 0.0), batch(group, 0.3)
    assert torch.equal(plain.masked, edited.masked) and torch.equal(plain.clean, edited.clean)
    assert torch.equal(plain.in_loss, plain.masked)   # without it, the masked positions alone, as ever
    answer = answer_positions(group, plain.clean.shape[1])
    assert torch.equal(edited.in_loss, answer)
    swapped = plain.noisy != edited.noisy
    assert not bool((swapped & ~answer).any()) and not bool((swapped & edited.masked).any())
    assert not bool((edited.noisy[swapped] == special_ids("llada2_moe")["mask"]).any())
    share = float(swapped.sum()) / float((answer & ~edited.masked).sum())
    assert 0.2 < share < 0.4   # a wrong id may equal the right one, so a little under 0.3
    # About half of them stutter: a neighbour's token, as the sampler's slips do; a uniform id hardly ever would.
    stutters = (edited.noisy == plain.clean.roll(1, dims=1)) | (edited.noisy == plain.clean.roll(-1, dims=1))
    assert 0.3 < float((stutters & swapped).sum()) / float(swapped.sum()) < 0.7


def test_the_option_is_llada2_only_and_a_share(capsys):
    check_llada_only_share("--edit-noise", "edit_noise", capsys)


def test_the_trainer_hands_its_edit_noise_to_the_batches_and_counts_the_whole_answer(tmp_path):
    trainer, prepared = tiny_llada_first_batch(tmp_path, "--edit-noise", "0.2")
    batch = prepared.batch
    assert bool((batch.in_loss & ~batch.masked).any())
    assert bool(((batch.noisy != batch.clean) & batch.in_loss & ~batch.masked).any())
    trainer.feed.next = lambda: prepared
    loss, count = trainer.loss()
    assert count == int(batch.in_loss.sum()) > int(batch.masked.sum()) and torch.isfinite(loss)
