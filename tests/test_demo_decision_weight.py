"""The LLaDA-2 trainer's weight on the answer's first block (`--decision-weight`): the block the sampler's first step
sees all masked, where the demo's two fixed lines part. With a plain mean that choice is ~1 position in 45 of the
loss, and the demo fitted it for only ~89 % of its own training prompts (first_step_probe --split train)."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from scripts.demo import batches, train  # noqa: E402
from demo_trainer_helpers import tiny_llada_first_batch  # noqa: E402


def test_the_decision_block_is_the_answer_part_of_the_block_holding_its_first_token():
    block = batches.decision_block([5, 32, 40], 96, 32)
    assert [row.nonzero().flatten().tolist() for row in block] == [
        list(range(5, 32)), list(range(32, 64)), list(range(40, 64))]


def test_diffusion_gemma_refuses_a_decision_weight(capsys):
    with pytest.raises(SystemExit):
        train.parse_args(["--family", "diffusion_gemma", "--out", "x", "--decision-weight", "4"])
    assert "DiffusionGemma" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        train.parse_args(["--family", "llada2_moe", "--out", "x", "--decision-weight", "0"])


def test_the_loss_weights_the_decision_block_and_only_it(tmp_path):
    torch.manual_seed(0)
    trainer, prepared = tiny_llada_first_batch(tmp_path, "--fully-noised", "0.5")
    batch = prepared.batch

    def loss(weight: float) -> float:
        trainer.args.decision_weight = weight
        with torch.no_grad():
            return float(trainer._llada_loss(prepared)[0])

    plain, decision_only, three = loss(1.0), loss(1e9), loss(3.0)
    decision = batches.decision_block(batch.prompt_lengths, batch.clean.shape[1], 32) & batch.masked
    in_decision, in_loss = int(decision.sum()), int(batch.masked.sum())
    assert 0 < in_decision < in_loss
    # Three times the decision block's share of the loss, the rest as before: the mean re-weighted by count.
    decision_sum = decision_only * in_decision
    expected = (plain * in_loss - decision_sum + 3 * decision_sum) / (in_loss + 2 * in_decision)
    assert three == pytest.approx(expected, rel=1e-4)
    assert abs(decision_only - plain) > 1e-3


def test_per_answer_weights_give_every_answer_the_same_decision_weight_however_few_positions_it_holds():
    prompts = [31, 16, 32, 40]   # decision blocks of 1, 16, 32 and 24 answer positions
    weights = batches.decision_weights(prompts, 96, 32, 4.0, per_answer=True)
    decision = batches.decision_block(prompts, 96, 32)
    assert [float(row[held].sum()) for row, held in zip(weights, decision)] == [64.0] * 4
    assert float(weights[0, 31]) == 64.0 and float(weights[2, 40]) == 2.0
    assert bool((weights[~decision] == 1).all())
    # The default stays a weight per position: an answer counts by how many positions its first block holds.
    plain = batches.decision_weights(prompts, 96, 32, 4.0)
    assert torch.equal(plain, 1 + 3 * decision.float())


def test_per_answer_is_refused_for_diffusion_gemma(capsys):
    with pytest.raises(SystemExit):
        train.parse_args(["--family", "diffusion_gemma", "--out", "x", "--decision-per-answer"])
    error = capsys.readouterr().err
    assert "DiffusionGemma" in error and "--decision-per-answer" in error


def one_row(prepared, row: int):
    """The Prepared batch cut to one of its examples (block-causal: the others never reached its loss)."""
    batch = prepared.batch
    length = batch.lengths[row]
    cut = {name: getattr(batch, name)[row:row + 1, :length] for name in ("clean", "noisy", "masked", "in_loss")}
    return dataclasses.replace(prepared, batch=dataclasses.replace(
        batch, **cut, context=None, lengths=[length], prompt_lengths=[batch.prompt_lengths[row]]))


def test_the_trainer_weighs_each_answer_once_with_decision_per_answer(tmp_path):
    torch.manual_seed(0)
    trainer, prepared = tiny_llada_first_batch(tmp_path, "--fully-noised", "0.5", "--decision-weight", "1e9",
                                               "--decision-per-answer")
    batch = prepared.batch
    held = [batches.first_block_end(p, 32) - p for p in batch.prompt_lengths]
    decision = batches.decision_block(batch.prompt_lengths, batch.clean.shape[1], 32) & batch.masked
    counts = decision.sum(dim=1).tolist()
    assert len(set(held)) > 1 and sum(c > 0 for c in counts) > 1

    def loss(prepared_batch, per_answer: bool) -> float:
        trainer.args.decision_per_answer = per_answer
        with torch.no_grad():
            return float(trainer._llada_loss(prepared_batch)[0])

    # Each row's own mean loss over its masked decision positions, then the batch's: weighted by count / held.
    means = [loss(one_row(prepared, row), False) if count else 0.0 for row, count in enumerate(counts)]
    expected = sum(m * c / h for m, c, h in zip(means, counts, held)) / sum(c / h for c, h in zip(counts, held))
    assert loss(prepared, True) == pytest.approx(expected, rel=1e-3)
    by_count = sum(m * c for m, c in zip(means, counts)) / sum(counts)
    assert loss(prepared, False) == pytest.approx(by_count, rel=1e-3)
    assert abs(expected - by_count) > 1e-3
