"""The demo trainer's command line (scripts/demo/train.py): its options and the checks that reject a bad
combination with one line, before any data is made."""

from __future__ import annotations

import argparse
from pathlib import Path

from .demo_config import SIZES


def parse_args(argv=None, description: str = "") -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", required=True, choices=("diffusion_gemma", "llada2_moe"))
    p.add_argument("--out", required=True, type=Path, help="run folder (created; resumed when it holds state.pt)")
    p.add_argument("--steps", type=int, default=8000)
    p.add_argument("--token-budget", type=int, default=0, help="padded tokens per batch (0 = sized for the "
                   "device: 8192 on CPU, from the free memory on CUDA)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--workers", type=int, default=1, help="processes making batches ahead (0 = in this one)")
    p.add_argument("--examples-per-chunk", type=int, default=1024, help="examples per chunk of the data stream")
    p.add_argument("--lr", type=float, default=1.5e-3)
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--think-probability", type=float, default=0.3, help="DiffusionGemma examples with thinking")
    p.add_argument("--self-conditioning", type=float, default=0.5, help="share of DiffusionGemma steps trained "
                   "with a self-conditioning pass")
    p.add_argument("--max-length", type=int, default=640, help="longest example (tokens) trained on")
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--checkpoint-every", type=int, default=250)
    p.add_argument("--eval-every", type=int, default=1000, help="0 = no evaluation")
    p.add_argument("--eval-n", type=int, default=12, help="held-out prompts per task at each evaluation")
    p.add_argument("--stop-at", type=int, help="save and stop after this step without changing the schedule "
                   "(--steps): a phase of a longer run")
    p.add_argument("--time-limit", type=float, default=0.0, metavar="SECONDS", help="train for at most this long "
                   "(this invocation, from its first step), then save and stop; the learning rate's cosine follows "
                   "whichever of step and time is further along, so a run cut by the clock still ends cooled "
                   "(scripts/demo/gpu_run.py); 0 = no limit")
    p.add_argument("--focus", default="", help="train only these tasks[:sub-task], comma-separated (e.g. "
                   "arithmetic:add,repeat,counting,chat); empty = the whole curriculum; may change on resume")
    p.add_argument("--composed-chat", type=float, default=0.0, help="share of chat turns replaced by composed "
                   "small talk and out-of-scope prompts (scripts/demo/chat_compose.py)")
    p.add_argument("--thanks-share", type=float, default=0.0, metavar="S", help="share of the composed turns "
                   "that are thanks, the other kinds keeping their ratios (chat_compose.intent_weights); "
                   "0 = the composed data's own mix (28 %% thanks)")
    p.add_argument("--intent-labels", type=float, default=0.0, metavar="P", help="share of the composed turns "
                   "asked for their intent's name instead of their line, under a system message no user types "
                   "(chat_compose.labelled: five kinds to learn, not two lines); 0 = none")
    p.add_argument("--bare-share", type=float, default=0.0, metavar="P", help="share of the composed turns' built "
                   "phrases that are the intent's words alone, no lead or tail (chat_compounds.build); 0 = none")
    p.add_argument("--fully-noised", type=float, default=0.2, help="share of canvases / blocks noised whole "
                   "(t = 1, as the sampler's first step sees them)")
    p.add_argument("--init-from", type=Path, help="start from this checkpoint folder's weights (e.g. "
                   "tui/demo/llada2-demo; a quantized one is dequantized) instead of random ones, with a fresh "
                   "optimizer; ignored once state.pt exists")
    p.add_argument("--ema", type=float, default=0.0, metavar="DECAY", help="export a moving average of the "
                   "weights with this decay (e.g. 0.998; scripts/demo/weight_average.py) instead of the last "
                   "step's; 0 = off")
    p.add_argument("--decision-weight", type=float, default=1.0, metavar="W", help="LLaDA-2: weight of the "
                   "answer's first block in the loss (scripts/demo/batches.decision_block), W times every other "
                   "position's; 1 = the plain mean")
    p.add_argument("--decision-per-answer", action="store_true", help="LLaDA-2: W x half a block for every "
                   "answer's first block in all, however few positions the prompt leaves it (batches.decision_weights)")
    p.add_argument("--prompt-dropout", type=float, default=0.0, metavar="P", help="LLaDA-2: hide each "
                   "character of the user's message behind <|mask|> with this probability (scripts/demo/batches.py); "
                   "0 = off")
    p.add_argument("--edit-noise", type=float, default=0.0, metavar="P", help="LLaDA-2: give this share of the "
                   "unmasked answer positions a wrong id and put the whole answer in the loss, so that LLaDA-2.1's "
                   "token editing can fix a wrong token (scripts/demo/batches.py); 0 = off")
    p.add_argument("--prefix-noise", type=float, default=0.0, metavar="P", help="DiffusionGemma: the encoder reads "
                   "the answer's earlier canvases with about this share of their positions given a wrong id, as "
                   "sampling at a temperature commits them (scripts/demo/batches.py); 0 = off")
    p.add_argument("--word-pieces", type=int, default=0, metavar="N", help="read prompts with N word pieces learnt "
                   "from the training prompts (scripts/demo/word_pieces.py; --init-from is grown to them); 0 = none")
    p.add_argument("--lowercase-prompts", action="store_true", help="read prompts lower-cased (the model still "
                   "writes both cases; scripts/demo/word_pieces.py)")
    p.add_argument("--size", default="demo", choices=SIZES, help="model size preset "
                   "(scripts/demo/demo_config.py); a LLaDA-2 --init-from with fewer layers is grown to it "
                   "(scripts/demo/deepen.py)")
    args = p.parse_args(argv)
    if args.decision_weight <= 0:
        p.error("--decision-weight must be above 0")
    if args.word_pieces < 0:
        p.error("--word-pieces must be 0 (none) or a number of merges")
    llada, dg = ("llada2_moe", "LLaDA-2"), ("diffusion_gemma", "DiffusionGemma")
    for option, share, (family, name), why in (
            ("--prompt-dropout", args.prompt_dropout, llada, "DiffusionGemma's encoder reads its prompt clean"),
            ("--edit-noise", args.edit_noise, llada, "DiffusionGemma has no editing"),
            ("--prefix-noise", args.prefix_noise, dg, "LLaDA-2's --edit-noise is its counterpart")):
        if not 0 <= share < 1 or (share and args.family != family):
            p.error(f"{option} is a share (at least 0, below 1) for {name} only: {why}")
    for option, share in (("--thanks-share", args.thanks_share), ("--intent-labels", args.intent_labels),
                          ("--bare-share", args.bare_share)):
        if not 0 <= share < 1:
            p.error(f"{option} must be at least 0 and below 1")
        if share and not args.composed_chat:
            p.error(f"{option} is a share of the composed turns; give --composed-chat too")
    if args.time_limit < 0:
        p.error("--time-limit must be 0 (none) or a number of seconds")
    if (args.decision_weight != 1 or args.decision_per_answer) and args.family != "llada2_moe":
        p.error("--decision-weight and --decision-per-answer weight LLaDA-2's first answer block; DiffusionGemma's "
                "loss has no such block")
    return args
