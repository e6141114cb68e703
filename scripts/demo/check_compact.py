"""Check that the compact training layouts (scripts/demo/compact.py) give the same logits, at every trained
position, as the full block-parallel layouts that tests/test_demo_parity.py proves equal to the engine.

    /work/trainenv/bin/python -m scripts.demo.check_compact      # prints the largest differences; exit 1 if any > 1e-9

In float64, so that a difference means a different attention pattern, not float32 rounding (which the two
layouts round differently: ~5e-5 on these logits).
"""

from __future__ import annotations

import random
import sys

import torch

from . import batches, compact
from .demo_config import demo_checkpoint_config
from .tokenizers import load_tokenizer, special_ids, write_tokenizer
from .torch_dg import DiffusionGemma, training_layout
from .torch_llada2 import LLaDA2Moe, training_masks


def main() -> int:
    import tempfile
    from pathlib import Path

    torch.manual_seed(0)
    worst = {}
    for family in ("diffusion_gemma", "llada2_moe"):
        folder = Path(tempfile.mkdtemp())
        write_tokenizer(folder, family)
        tokenizer = load_tokenizer(folder, family)
        config, _ = demo_checkpoint_config(family, "tiny")
        rng, generator = random.Random(1), torch.Generator().manual_seed(1)
        examples = batches.encoded_examples(rng, tokenizer, family, 6, 0.3 if family == "diffusion_gemma" else 0, 640)
        ids = special_ids(family)
        if family == "diffusion_gemma":
            config["text_config"]["sliding_window"] = 24  # shorter than the rows: the window matters
            model = DiffusionGemma(config).eval().double()
            canvas, window, vocab = config["canvas_length"], 24, config["text_config"]["vocab_size"]
            batch = batches.dg_batch(examples, canvas, vocab, ids["pad"], generator)
            length = batch.clean.shape[1]
            full = training_layout(batch.prompt_lengths, batch.blocks, canvas, window, length)
            with torch.no_grad():
                expected = model.training_logits(batch.clean, batch.noisy, full)[full.canvas]
                layout = compact.dg_layout(batch.prompt_lengths, batch.blocks, canvas, window, length)
                prefix = model.encode(batch.clean, torch.arange(length).expand_as(batch.clean), layout.encoder_masks)
                got = model.decode(compact.take(batch.noisy, layout.gather), layout.positions, prefix,
                                   layout.decoder_masks)[layout.valid]
        else:
            model = LLaDA2Moe(config).eval().double()
            batch = batches.llada_batch(examples, 32, ids["eos"], ids["mask"], generator)
            length = batch.clean.shape[1]
            full = training_masks(batch.lengths, 32, total_length=length)
            with torch.no_grad():
                expected = model.training_logits(batch.clean, batch.noisy, full)[batch.masked]
                layout = compact.llada_layout(batch.prompt_lengths, batch.lengths, 32, length)
                prefix = model.encode(batch.clean, torch.arange(length).expand_as(batch.clean), layout.clean_mask)
                logits = model(compact.take(batch.noisy, layout.gather), layout.positions, layout.noisy_mask, prefix)
                got = logits[compact.take(batch.masked, layout.gather) & layout.valid]
        worst[family] = float((expected - got).abs().max())
    print(worst)
    return 0 if max(worst.values()) <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
