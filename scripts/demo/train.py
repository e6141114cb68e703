"""Train a demo model: `python -m scripts.demo.train --family diffusion_gemma --out RUN_FOLDER`.

Runs with the PyTorch environment (torch, numpy, tokenizers, safetensors; no MLX, so a GPU machine's own does):
PyTorch because a training step is ~2.8-3x faster than MLX's on a CPU (scripts/demo/compare_trainers.py);
the PyTorch networks compute exactly what the engine computes (tests/test_demo_parity.py).

Seeded and resumable: RUN_FOLDER/state.pt holds the model, the optimizer, the step and the data stream's
position, written atomically every --checkpoint-every steps; rerunning the same command continues from it, on
either device (`--device cpu|cuda`; CUDA trains under bfloat16 autocast). Batches are made ahead in
--workers processes (scripts/demo/feed.py); --token-budget 0 sizes them for the device.
RUN_FOLDER/log.jsonl gets the loss every --log-every steps and the held-out accuracy (bench/eval_demo.py on
the exported checkpoint, run by the engine itself) every --eval-every steps. RUN_FOLDER/model is the
exported checkpoint in the real Hugging Face layout, with the demo's tokenizer and chat template.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from contextlib import nullcontext
from pathlib import Path

# torch brings its own BLAS: this process never calls engine.prepare_process, so the two stay apart

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from . import batches, compact, train_cli  # noqa: E402
from .feed import Feed, FeedSpec  # noqa: E402
from .demo_config import demo_checkpoint_config  # noqa: E402
from .engine_eval import evaluate  # noqa: E402
from .export import export_checkpoint  # noqa: E402
from .tokenizers import special_ids, write_tokenizer  # noqa: E402
from .weight_average import WeightAverage  # noqa: E402
from .word_pieces import grow_checkpoint, reading_for_run  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    return train_cli.parse_args(argv, __doc__)


def initialise(model: torch.nn.Module, generator: torch.Generator) -> None:
    """GPT-style: N(0, 0.02) for every matrix and embedding; norms, scales and layer scalars stay 1."""
    for name, parameter in model.named_parameters():
        if parameter.ndim >= 2:
            with torch.no_grad():
                parameter.normal_(0.0, 0.02, generator=generator)


CPU_TOKEN_BUDGET = 8192
# A rough upper bound of one padded token's training memory at the demo sizes (every layer's activations, the batched
# experts' [tokens, experts, 2I] products, masks): the CUDA budget, a quarter of free memory over it, has slack.
TRAINING_BYTES_PER_TOKEN = 256 * 1024
MAX_TOKEN_BUDGET = 262_144


def token_budget(args) -> int:
    if args.token_budget:
        return args.token_budget
    if args.device != "cuda":
        return CPU_TOKEN_BUDGET
    free, _ = torch.cuda.mem_get_info()
    return int(min(MAX_TOKEN_BUDGET, max(CPU_TOKEN_BUDGET, free // 4 // TRAINING_BYTES_PER_TOKEN)))


def learning_rate(step: int, args, elapsed: float = 0.0) -> float:
    """Linear warm-up over --warmup steps, then a cosine to --min-lr at --steps or --time-limit, whichever first."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    if args.time_limit:
        progress = max(progress, elapsed / args.time_limit)
    progress = min(1.0, progress)
    return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * progress))


class Trainer:
    def __init__(self, args):
        self.args = args
        self.family = args.family
        self.model_dir = args.out / "model"
        try:
            self.merges, lowercase = reading_for_run(args.out, args.word_pieces, args.lowercase_prompts, args.init_from)
        except ValueError as exc:
            raise SystemExit(f"--word-pieces: {exc}") from None
        write_tokenizer(self.model_dir, self.family, self.merges, lowercase)
        self.ids = special_ids(self.family)
        self.device = torch.device(args.device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise SystemExit("--device cuda: PyTorch sees no CUDA device here")
        self.config, self.generation_config = demo_checkpoint_config(self.family, args.size, self.merges)
        if self.family == "diffusion_gemma":
            from .torch_dg import DiffusionGemma

            self.model = DiffusionGemma(self.config)
            self.canvas = self.config["canvas_length"]
            self.window = self.config["text_config"]["sliding_window"]
            self.vocab = self.config["text_config"]["vocab_size"]
        else:
            from .torch_llada2 import LLaDA2Moe

            self.model = LLaDA2Moe(self.config)
            self.block = 32
            self.vocab = self.config["vocab_size"]
        self.generator = torch.Generator().manual_seed(args.seed)
        initialise(self.model, self.generator)
        if args.init_from is not None and not (args.out / "state.pt").exists():
            self._load_weights(args.init_from)
        self.model.to(self.device)
        decay = [p for p in self.model.parameters() if p.ndim >= 2 and p.requires_grad]
        other = [p for p in self.model.parameters() if p.ndim < 2 and p.requires_grad]
        self.optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                            {"params": other, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.98))
        self.average = WeightAverage(self.model, args.ema) if args.ema else None
        self.step = 0
        self.budget = token_budget(args)
        position = self._resume()
        spec = FeedSpec(self.family, str(self.model_dir), args.seed, args.examples_per_chunk, self.budget,
                        args.think_probability if self.family == "diffusion_gemma" else 0.0, args.max_length,
                        args.focus, self.canvas if self.family == "diffusion_gemma" else self.block, self.vocab,
                        self.ids, args.composed_chat, args.fully_noised, args.prompt_dropout, args.thanks_share,
                        args.intent_labels, args.bare_share, args.edit_noise, args.prefix_noise)
        self.feed = Feed(spec, args.workers, *position)

    # ---- state ------------------------------------------------------------------------------------------

    def _load_weights(self, folder: Path) -> None:
        """The exported or bundled checkpoint's tensors, dequantized when it is stored quantized (the bundled
        DiffusionGemma demo is 8-bit: scripts/demo/dequantize.py)."""
        from .deepen import deepen, layer_count
        from .dequantize import as_network_names, load_float_weights
        from .widen import widen

        path = folder / "model.safetensors"
        own = self.model.state_dict()
        arrays = as_network_names(load_float_weights(folder), own)
        have, want = layer_count(arrays), layer_count(own)
        narrow = json.loads((folder / "config.json").read_text())
        wider = narrow.get("hidden_size") != self.config.get("hidden_size")
        if (have != want or wider) and (self.family != "llada2_moe" or have > want):
            raise SystemExit(f"--init-from {folder}: {have} layers, but --size {self.args.size} has {want}"
                             " (only a LLaDA-2 checkpoint can be grown, deeper or wider)")
        if have != want:
            arrays = deepen(arrays, own)
            print(f"grown from {have} to {want} layers", flush=True)
        try:
            if wider:
                arrays = widen(arrays, {name: value.numpy() for name, value in own.items()},
                               narrow | {"num_hidden_layers": want}, self.config)
                print(f"grown from hidden size {narrow['hidden_size']} to {self.config['hidden_size']}", flush=True)
            arrays = grow_checkpoint(arrays, own, self.family, self.merges)
        except ValueError as exc:
            raise SystemExit(f"--init-from {folder}: {exc}") from None
        self.model.load_state_dict({name: torch.from_numpy(value) for name, value in arrays.items()})
        print(f"weights from {path}", flush=True)

    def _resume(self) -> tuple[int, int]:
        """Load state.pt (saved on either device) and return the data stream's position. A state saved before
        the feed existed has none: it continues from the stream's start (its focus may have changed anyway)."""
        path = self.args.out / "state.pt"
        if not path.exists():
            return 0, 0
        state = torch.load(path, weights_only=False, map_location="cpu")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])   # moves the moments to the parameters' device
        self.step = state["step"]
        self.generator.set_state(state["generator"])
        if self.average is not None:
            if state.get("average"):
                self.average.load_state_dict(state["average"])
            else:   # a run resumed with --ema for the first time averages from here
                self.average = WeightAverage(self.model, self.args.ema)
        print(f"resumed at step {self.step}", flush=True)
        return tuple(state.get("feed", (0, 0)))

    def save(self) -> None:
        path = self.args.out / "state.pt"
        temporary = path.with_suffix(".tmp")
        torch.save({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(), "step": self.step,
                    "generator": self.generator.get_state(), "feed": self.feed.position,
                    "average": None if self.average is None else self.average.state_dict(),
                    "args": vars(self.args) | {"out": str(self.args.out)}}, temporary)
        os.replace(temporary, path)
        with nullcontext() if self.average is None else self.average.applied():
            export_checkpoint(self.model, self.model_dir, self.family, self.config, self.generation_config)

    # ---- losses -----------------------------------------------------------------------------------------

    def loss(self) -> tuple[torch.Tensor, int]:
        prepared = self.feed.next()
        # bfloat16 matmuls on CUDA; the networks keep norms, softmax and logits in float32 themselves.
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.device.type == "cuda"):
            if self.family == "diffusion_gemma":
                return self._dg_loss(prepared)
            return self._llada_loss(prepared)

    def _on_device(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.to(self.device, non_blocking=True)

    def _dg_loss(self, prepared) -> tuple[torch.Tensor, int]:
        batch, device = prepared.batch, self.device
        clean, noisy_rows = self._on_device(batch.clean), self._on_device(batch.noisy)
        length = clean.shape[1]
        layout = compact.dg_layout(batch.prompt_lengths, batch.blocks, self.canvas, self.window, length, device)
        model = self.model
        context = clean if batch.context is None else self._on_device(batch.context)   # prefix noise
        prefix = model.encode(context, torch.arange(length, device=device).expand_as(clean), layout.encoder_masks)
        noisy, target = compact.take(noisy_rows, layout.gather), compact.take(clean, layout.gather)
        self_conditioning = None
        if prepared.coin < self.args.self_conditioning:
            # As the sampler uses it: the previous (noisier) step's logits over its schedule temperature.
            with torch.no_grad():
                first = model.decode(compact.take(self._on_device(batch.noisier), layout.gather), layout.positions,
                                     [(k.detach(), v.detach()) for k, v in prefix], layout.decoder_masks)
                self_conditioning = first.float() / prepared.temperature
        logits = model.decode(noisy, layout.positions, prefix, layout.decoder_masks, self_conditioning,
                              layout.valid if self_conditioning is not None else None)
        return F.cross_entropy(logits[layout.valid].float(), target[layout.valid]), batch.tokens

    def _llada_loss(self, prepared) -> tuple[torch.Tensor, int]:
        batch, device = prepared.batch, self.device
        clean = self._on_device(batch.clean)
        length = clean.shape[1]
        # Counted on the CPU side, so the count costs the GPU no sync.
        cpu_layout = compact.llada_layout(batch.prompt_lengths, batch.lengths, self.block, length)
        count = int((compact.take(batch.in_loss, cpu_layout.gather) & cpu_layout.valid).sum())
        layout = compact.llada_layout(batch.prompt_lengths, batch.lengths, self.block, length, device)
        # The prompt's earlier blocks reach the answer only through this prefix: encoded from the context, so a
        # dropped prompt character is hidden there too (batches.py, prompt dropout).
        context = clean if batch.context is None else self._on_device(batch.context)
        prefix = self.model.encode(context, torch.arange(length, device=device).expand_as(clean), layout.clean_mask)
        noisy = compact.take(self._on_device(batch.noisy), layout.gather)
        target = compact.take(clean, layout.gather)
        in_loss = compact.take(self._on_device(batch.in_loss), layout.gather) & layout.valid
        logits = self.model(noisy, layout.positions, layout.noisy_mask, prefix)
        losses = F.cross_entropy(logits[in_loss].float(), target[in_loss], reduction="none")
        weights = batches.decision_weights(batch.prompt_lengths, length, self.block, self.args.decision_weight,
                                           self.args.decision_per_answer)
        weights = compact.take(self._on_device(weights), layout.gather)[in_loss]
        return (losses * weights).sum() / weights.sum(), count

    # ---- the loop ---------------------------------------------------------------------------------------

    def run(self) -> None:
        args = self.args
        log = open(args.out / "log.jsonl", "a", encoding="utf-8")
        began, tokens, losses, stop = time.perf_counter(), 0, [], []
        # A stop (kill, Ctrl+C) lands between steps and saves first: hours of CPU training are not thrown away
        # for the up to --checkpoint-every steps since the last save.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.append(True))
        last = min(args.steps, args.stop_at or args.steps)
        started, out_of_time = time.perf_counter(), False
        while self.step < last and not stop and not out_of_time:
            for group in self.optimizer.param_groups:
                group["lr"] = learning_rate(self.step, args, time.perf_counter() - started)
            loss, count = self.loss()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
            if self.average is not None:
                self.average.update()
            self.step += 1
            tokens += count
            losses.append(loss.detach())   # read at the log line: no host sync per step
            if self.step % args.log_every == 0:
                now = time.perf_counter()
                record = {"step": self.step, "loss": round(float(torch.stack(losses).mean()), 4),
                          "lr": round(learning_rate(self.step, args, now - started), 6),
                          "tokens_per_s": round(tokens / (now - began), 1), "time": round(time.time())}
                _log(log, record)
                began, tokens, losses = time.perf_counter(), 0, []
            if self.step % args.checkpoint_every == 0 or self.step == args.steps:
                self.save()
            if args.eval_every and (self.step % args.eval_every == 0 or self.step == args.steps):
                self.save()
                result = evaluate(self.model_dir, args.eval_n)
                record = {"step": self.step, "eval": result, "time": round(time.time())}
                _log(log, record)
            out_of_time = bool(args.time_limit) and time.perf_counter() - started >= args.time_limit
        if self.step < args.steps and (stop or out_of_time or self.step == last):
            self.save()
            record = {"stopped_at": self.step, "time": round(time.time())}   # the model card counts steps to here
            if self.device.type == "cuda":   # what a run took of a GPU it may share (scripts/demo/gpu_run.py)
                record["max_memory_mib"] = round(torch.cuda.max_memory_allocated(self.device) / 2 ** 20)
            _log(log, record)


def _log(log, record: dict) -> None:
    print(json.dumps(record), flush=True)
    log.write(json.dumps(record) + "\n")
    log.flush()


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    trainer = Trainer(args)
    try:
        trainer.run()
    finally:
        trainer.feed.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
