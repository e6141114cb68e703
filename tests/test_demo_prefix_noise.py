"""The DiffusionGemma trainer's prefix noise (`--prefix-noise`): the encoder reads the answer's canvases with wrong
ids (half of them a neighbour's token) in a share of their positions, as sampling at a temperature commits them,
while every canvas still learns its clean text; drawn after every other draw, so that a batch without it is what
it always was."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from scripts.demo import batches, train  # noqa: E402
from scripts.demo.tokenizers import special_ids, vocab_size  # noqa: E402
from demo_trainer_helpers import thanks_group  # noqa: E402

CANVAS = 32


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    return thanks_group(tmp_path_factory.mktemp("tokenizer"), "diffusion_gemma",
                        "You're welcome! I'm only a tiny DiffusionGemma demo model.", "The user is thanking me.")


def batch(group, prefix_noise: float) -> batches.DGBatch:
    return batches.dg_batch(group, CANVAS, vocab_size("diffusion_gemma"), special_ids("diffusion_gemma")["pad"],
                            torch.Generator().manual_seed(5), prefix_noise=prefix_noise)


def canvas_positions(group, length: int) -> torch.Tensor:
    at = torch.zeros((len(group), length), dtype=torch.bool)
    for row, example in enumerate(group):
        at[row, len(example.prompt):batches.dg_length(example, CANVAS)] = True
    return at


def test_prefix_noise_slips_only_the_canvases_the_encoder_reads_and_leaves_the_rest_of_the_batch(group):
    plain, noised = batch(group, 0.0), batch(group, 0.2)
    assert plain.context is None   # without it the encoder reads the clean row, as ever
    for name in ("clean", "noisy", "noisier"):
        assert torch.equal(getattr(plain, name), getattr(noised, name))
    assert plain.tokens == noised.tokens and plain.blocks == noised.blocks
    canvases = canvas_positions(group, plain.clean.shape[1])
    slipped = noised.context != noised.clean
    assert not bool((slipped & ~canvases).any())   # the prompt stays as the user typed it
    share = float(slipped.sum()) / float(canvases.sum())
    assert 0.1 < share < 0.3   # U(0, 0.4) a row, and a wrong id may equal the right one
    stutters = (noised.context == plain.clean.roll(1, dims=1)) | (noised.context == plain.clean.roll(-1, dims=1))
    assert 0.3 < float((stutters & slipped).sum()) / float(slipped.sum()) < 0.7
    rows = slipped.sum(dim=1).float() / canvases.sum(dim=1).float()
    assert float(rows.max() - rows.min()) > 0.1   # a share per row: some read nearly clean prefixes


def test_the_option_is_diffusion_gemma_only_and_a_share(capsys):
    with pytest.raises(SystemExit):
        train.parse_args(["--family", "llada2_moe", "--out", "x", "--prefix-noise", "0.1"])
    assert "DiffusionGemma only" in capsys.readouterr().err
    for bad in ("1", "-0.1"):
        with pytest.raises(SystemExit):
            train.parse_args(["--family", "diffusion_gemma", "--out", "x", "--prefix-noise", bad])
    args = train.parse_args(["--family", "diffusion_gemma", "--out", "x", "--prefix-noise", "0.15"])
    assert args.prefix_noise == 0.15


def test_the_trainer_encodes_the_noised_prefix_and_learns_the_clean_canvases(tmp_path):
    args = train.parse_args(["--family", "diffusion_gemma", "--out", str(tmp_path), "--size", "tiny", "--workers", "0",
                             "--examples-per-chunk", "32", "--token-budget", "2048", "--focus", "chat",
                             "--think-probability", "1", "--prefix-noise", "0.2", "--self-conditioning", "0"])
    trainer = train.Trainer(args)
    try:
        prepared = trainer.feed.next()
    finally:
        trainer.feed.close()
    batch = prepared.batch
    assert batch.context is not None and bool((batch.context != batch.clean).any())
    read = []
    encode = trainer.model.encode
    trainer.model.encode = lambda rows, *rest: read.append(rows) or encode(rows, *rest)
    trainer.feed.next = lambda: prepared
    loss, count = trainer.loss()
    assert torch.equal(read[0], batch.context) and count == batch.tokens and torch.isfinite(loss)
