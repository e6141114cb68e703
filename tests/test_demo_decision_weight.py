"""The LLaDA-2 trainer's weight on the answer's first block (`--decision-weight`): the block the sampler's first step
sees all masked, where the demo's two fixed lines part. With a plain mean that choice is ~1 position in 45 of the
loss, and the demo fitted it for only ~89 % of its own training prompts (first_step_probe --split train)."""

from __future__ import annotations

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
