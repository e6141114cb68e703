"""Time mlx-vlm's DiffusionGemma on one checkpoint folder (run by bench_denoise.py --compare-mlx-vlm, in mlx-vlm's
own interpreter). Prints one JSON line. Deliberately imports nothing from this project: it measures mlx-vlm as
a user gets it (its loader, its sanitize, its `stream_diffusion_generate`).

Two numbers, both with the settings bench_denoise gives our engine (entropy-bound, temperature 0, full canvas,
a fixed number of steps: stability 0 and confidence 1e-9 so no block stops early):
  * ms_per_step: mlx-vlm's end-to-end generation, one block, timed from the end of its prefill (the call that
    builds the decoder masks comes right after the prefill's eval) to its first yielded token (right after
    the block's last step and its eval), divided by the steps;
  * network_ms_per_step: its self-conditioning from the previous logits (`diffusion_self_conditioning`: softmax,
    soft embedding) and the decoder pass (`diffusion_decoder_logits`) alone.

Usage: python bench/mlx_vlm_step.py FOLDER --steps 8 --prompt-tokens 120 [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def openblas_in_maps() -> str | None:
    """Which OpenBLAS file (if any) this process has mapped: the BLAS MLX's CPU matmuls resolved to."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                name = os.path.basename(path).lower()
                if "openblas" in name and "scipy" not in name:
                    return path
    except OSError:
        pass
    return None


class NeverStop:
    """Stands in for the tokenizer's stopping criteria so an EOS drawn by random weights cannot end the run."""

    def add_eos_token_ids(self, ids) -> None:
        pass

    def __call__(self, token) -> bool:
        return False


class IdsOnlyDetokenizer:
    """Stands in for the streaming detokenizer: the random checkpoints' vocabularies are larger than the
    tokenizer they borrow (the tiny fixture's 512 ids), and mlx-vlm's detokenizer indexes its own table with
    every id. Text is not what is measured; the last step's tokens still pass through it."""

    last_segment = ""

    def reset(self) -> None:
        pass

    def add_token(self, token, **kwargs) -> None:
        pass

    def finalize(self) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--prompt-tokens", type=int, default=120)
    parser.add_argument("--repeats", type=int, default=2, help="measured generations (after one warm-up)")
    args = parser.parse_args()

    import mlx.core as mx
    import mlx_vlm
    from mlx_vlm.generate.diffusion import stream_diffusion_generate
    from mlx_vlm.utils import load

    model, processor = load(args.folder)
    tokenizer = getattr(processor, "tokenizer", processor)
    tokenizer.stopping_criteria = NeverStop()
    processor.detokenizer = IdsOnlyDetokenizer()
    # The same stop rule our engine is given: never stable-and-confident, so every block runs all its steps.
    generation = dict(model.config.generation_config or {})
    generation.update(stability_threshold=0, confidence_threshold=1e-9)
    generation.pop("diffusion_stopping_config", None)
    model.config.generation_config = generation
    canvas = int(model.config.canvas_length)
    prompt = mx.array([[int(i) % 400 + 100 for i in range(args.prompt_tokens)]], dtype=mx.int32)

    marks: dict[str, float] = {}
    masks = model.diffusion_decoder_masks

    def marked_masks(*a, **k):
        marks.setdefault("denoise_start", time.perf_counter())
        return masks(*a, **k)

    model.diffusion_decoder_masks = marked_masks

    def one_block() -> float:
        marks.clear()
        stream = stream_diffusion_generate(
            model, processor, tokenizer, prompt, None, None, max_tokens=canvas, skip_special_token_ids=[],
            temperature=0.0, max_denoising_steps=args.steps, diffusion_full_canvas=True,
            diffusion_sampler="entropy-bound")
        next(stream)  # the first token: the block is denoised and evaluated
        seconds = time.perf_counter() - marks["denoise_start"]
        stream.close()
        return seconds

    one_block()  # warm-up
    end_to_end = [one_block() / args.steps for _ in range(args.repeats)]

    # The network alone: one decoder pass with a self-conditioning signal, as every step after the first runs.
    cache = model.diffusion_prefill_cache(prompt, cache=model.make_cache())
    mx.eval([c.state for c in cache])
    canvas_ids = mx.random.randint(0, int(model.config.text_config.vocab_size), (1, canvas)).astype(mx.int32)
    mask = masks(canvas_ids, cache, None)
    logits = model.diffusion_decoder_logits(canvas_ids, cache=cache, decoder_attention_mask=mask)
    context = model.diffusion_prepare_self_conditioning()
    mx.eval(logits)
    network = []
    for _ in range(args.steps):
        began = time.perf_counter()
        # Its self-conditioning from the previous step's processed logits (its own softmax and soft embedding).
        signal = model.diffusion_self_conditioning(logits, context)
        mx.eval(model.diffusion_decoder_logits(canvas_ids, cache=cache, self_conditioning=signal,
                                               decoder_attention_mask=mask))
        network.append(time.perf_counter() - began)

    print(json.dumps({
        "mlx_vlm": getattr(mlx_vlm, "__version__", "unknown"),
        "mlx": mx.__version__,
        "python": sys.executable,
        "device": str(mx.default_device()),
        "blas": openblas_in_maps() or "bundled reference BLAS",
        "canvas_length": canvas,
        "prompt_tokens": args.prompt_tokens,
        "steps": args.steps,
        "ms_per_step": round(1000 * min(end_to_end), 2),
        "ms_per_step_each_run": [round(1000 * s, 2) for s in end_to_end],
        "network_ms_per_step": round(1000 * sorted(network)[len(network) // 2], 2),
    }))


if __name__ == "__main__":
    main()
