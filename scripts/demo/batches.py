"""Training batches for the demo models: curriculum examples, tokenized exactly as the app sends them, laid out
as each family's block-diffusion training needs them, and noised with each family's own objective.

* DiffusionGemma (uniform-state renoising): the answer is cut into canvases of the checkpoint's length (the
  last one filled with `<pad>`, which the official sampler writes after the end of a reply); each canvas
  gets a noise level t and every position is replaced by a uniformly random id (any id of the vocabulary,
  as the sampler draws them) with probability t. The encoder reads the clean sequence causally; the decoder
  denoises all canvases at once, each against the clean prefix before it (scripts/demo/torch_dg.py), or
  against one with slips in its canvases (`prefix_noise`, train.py --prefix-noise: see `dg_batch`).
* LLaDA-2 (masked block diffusion): prompt + answer + `<|endoftext|>`, filled with `<|endoftext|>` to a whole
  block (blocks count from position 0, so the prompt's tail shares the first answer block, as in the official
  generate); in each block every answer position is replaced by `<|mask|>` with probability t.

In both families a share of the canvases / blocks (`fully_noised`, 0.2 by default) is noised whole, t = 1: the
sampler's first step sees exactly that, and it is where the answer's intent is decided. Drawn from U(0, 1) alone,
a block of ~30 answer positions is all masked about once in 30, and a few visible answer tokens give the rest
away, so the prompt itself is hardly ever what the loss is learned from.

LLaDA-2 may also learn to edit (`edit_noise`, train.py --edit-noise), as LLaDA-2.1's token editing needs: that
share of the answer positions left unmasked get a wrong id instead (half of them a neighbour's token, half any
id), and every answer position of the block is in the loss, so the model learns both to re-write a wrong token
it reads and to keep a right one. A model trained on masks alone has never been asked about a filled position:
editing on, it re-writes right ones at random.

LLaDA-2 may also hide part of the prompt (`prompt_dropout`, train.py --prompt-dropout): each character of the
user's message is replaced by `<|mask|>` with that probability, never the chat template's own tokens, and none
of them is in the loss. A hidden "t" or "y" leaves the rest of the message to decide the answer, so the choice
cannot rest on one memorised spelling; the app never masks a prompt, which then shows every cue at once.

Batches are cut to a token budget from length-sorted examples, so padding stays small.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from . import chat_compose
from .curriculum import sample_mixture
from .tokenizers import encode_example


@dataclass
class Encoded:
    prompt: list[int]
    answer: list[int]
    task: str


def encoded_examples(rng: random.Random, tokenizer, family: str, count: int, think_probability: float,
                     max_length: int, focus: dict | None = None, composed_chat: float = 0.0,
                     thanks_share: float = 0.0, intent_labels: float = 0.0, bare_share: float = 0.0) -> list[Encoded]:
    """`composed_chat`: the share of chat examples replaced by composed small talk and out-of-scope prompts
    (scripts/demo/chat_compose.py), with thanks among them at `thanks_share` (0 = the composed data's own mix),
    and `intent_labels` of them asked for their intent's name instead (chat_compose.labelled; 0 = none, and the
    stream is drawn exactly as without the option), and `bare_share` of their built phrases the intent's words
    alone (chat_compose.compose's `bare`)."""
    out = []
    while len(out) < count:
        example = sample_mixture(rng, "train", family=family, think_probability=think_probability, focus=focus)
        if example.task == "chat" and composed_chat and rng.random() < composed_chat:
            example = chat_compose.example(rng, "train", family, example.think, thanks_share, bare_share)
            if intent_labels and rng.random() < intent_labels:
                example = chat_compose.labelled(example)
        prompt, answer = encode_example(example, tokenizer)
        if len(prompt) + len(answer) <= max_length:
            out.append(Encoded(prompt, answer, example.task))
    return out


def by_budget(examples: list[Encoded], length_of, token_budget: int, rng: random.Random) -> list[list[Encoded]]:
    """Length-sorted groups whose padded size (rows x longest row) stays within the budget, shuffled."""
    ordered = sorted(examples, key=length_of)
    groups, current, longest = [], [], 0
    for example in ordered:
        size = length_of(example)
        if current and max(longest, size) * (len(current) + 1) > token_budget:
            groups.append(current)
            current, longest = [], 0
        current.append(example)
        longest = max(longest, size)
    if current:
        groups.append(current)
    rng.shuffle(groups)
    return groups


# ---- DiffusionGemma -------------------------------------------------------------------------------------------


def dg_length(example: Encoded, canvas: int) -> int:
    return len(example.prompt) + -(-len(example.answer) // canvas) * canvas


@dataclass
class DGBatch:
    clean: torch.Tensor          # [B, T] prompt + answer canvases (pad-filled)
    noisy: torch.Tensor          # [B, T] the canvases renoised at t
    noisier: torch.Tensor        # [B, T] the same canvases at a higher noise level (the self-conditioning pass)
    prompt_lengths: list[int]
    blocks: list[int]
    tokens: int                  # canvas positions in the loss
    context: torch.Tensor | None = None  # [B, T] what the encoder reads, when not `clean` (prefix noise)


FULLY_NOISED = 0.2   # the default share of canvases / blocks noised whole


def noise_levels(shape: tuple[int, int], fully_noised: float, generator: torch.Generator) -> torch.Tensor:
    """One level t per canvas / block: U(0, 1), or 1 for a `fully_noised` share of them."""
    levels = torch.rand(shape, generator=generator)
    return torch.where(torch.rand(shape, generator=generator) < fully_noised, torch.ones_like(levels), levels)


def slips(clean: torch.Tensor, generator: torch.Generator, vocab: int) -> torch.Tensor:
    """A wrong id for every position: half of them repeat a neighbour's token (the samplers' own slips are mostly
    such stutters, "am..For", "ctrl++l", "rral", which a uniformly random id hardly ever looks like), half any id."""
    wrong = torch.randint(0, vocab, clean.shape, generator=generator)
    kind = torch.rand(clean.shape, generator=generator)
    return torch.where(kind < 0.25, clean.roll(1, dims=1), torch.where(kind < 0.5, clean.roll(-1, dims=1), wrong))


def dg_batch(group: list[Encoded], canvas: int, vocab: int, pad: int, generator: torch.Generator,
             fully_noised: float = FULLY_NOISED, prefix_noise: float = 0.0) -> DGBatch:
    """`prefix_noise` > 0: the encoder reads the answer's canvases with a share of their positions given a wrong
    id (`slips`; the share per row drawn from U(0, 2 x prefix_noise)), while every canvas still learns its clean
    text. The sampler commits a canvas as it stands, so at temperature 0.5-1 a later canvas is written after a
    misspelt one (`I will r il the user weaI`); trained on clean prefixes only, it then lost the thought's end
    and wrote the answer into the thought."""
    blocks = [-(-len(e.answer) // canvas) for e in group]
    prompts = [len(e.prompt) for e in group]
    length = max(p + b * canvas for p, b in zip(prompts, blocks))
    clean = torch.full((len(group), length), pad, dtype=torch.long)
    for row, example in enumerate(group):
        ids = example.prompt + example.answer
        clean[row, :len(ids)] = torch.tensor(ids)
    positions = torch.arange(length)
    start = torch.tensor(prompts)[:, None]
    canvas_at = (positions[None] >= start) & (positions[None] < start + torch.tensor(blocks)[:, None] * canvas)
    block_of = torch.div((positions[None] - start).clamp(min=0), canvas, rounding_mode="floor")
    levels = noise_levels((len(group), int(max(blocks))), fully_noised, generator)
    t = levels.gather(1, block_of.clamp(max=levels.shape[1] - 1))
    # The self-conditioning pass reads a noisier canvas (the sampler's previous step had accepted fewer
    # positions): nested noise, t' = t + (1 - t) * u with u ~ U(0, 0.3).
    t_noisier = t + (1 - t) * 0.3 * torch.rand(t.shape, generator=generator)
    draw = torch.rand(t.shape, generator=generator)

    def renoised(level):
        replace = canvas_at & (draw < level)
        return torch.where(replace, torch.randint(0, vocab, clean.shape, generator=generator), clean)

    noisy, noisier, context = renoised(t), renoised(t_noisier), None
    if prefix_noise > 0:   # drawn last, so the other draws stay what they are without it
        share = 2 * prefix_noise * torch.rand((len(group), 1), generator=generator)
        slipped = canvas_at & (torch.rand(clean.shape, generator=generator) < share)
        context = torch.where(slipped, slips(clean, generator, vocab), clean)
    return DGBatch(clean, noisy, noisier, prompts, blocks, int(canvas_at.sum()), context)


# ---- LLaDA-2 --------------------------------------------------------------------------------------------------


def llada_length(example: Encoded, block: int) -> int:
    return -(-(len(example.prompt) + len(example.answer)) // block) * block


@dataclass
class LLaDABatch:
    clean: torch.Tensor          # [B, T]: the targets
    context: torch.Tensor | None  # [B, T]: what the clean prefix is encoded from, when not `clean` (prompt dropout)
    noisy: torch.Tensor          # [B, T] answer positions masked at t per block (and the prompt's dropped ones)
    masked: torch.Tensor         # [B, T] bool: the positions given <|mask|>
    in_loss: torch.Tensor        # [B, T] bool: the positions in the loss (`masked`, or the whole answer: edit noise)
    lengths: list[int]
    prompt_lengths: list[int]


def first_block_end(prompt_length, block: int):
    """Where the block holding the answer's first token ends (an int, or a tensor of them). Blocks count from
    position 0, so the answer's first token shares a block with the prompt's tail."""
    return (prompt_length // block + 1) * block


def decision_block(prompt_lengths: list[int], length: int, block: int) -> torch.Tensor:
    """[B, T] bool: each example's answer positions in the block that holds its first answer token. The sampler's
    first step sees that block all masked, and the demos' two fixed lines part there: a weight on these positions
    (train.py --decision-weight) makes the choice count in the loss as it does in the app, where the rest of
    the answer, ~6 positions in 7, only copies the line already chosen."""
    starts = torch.tensor(prompt_lengths)[:, None]
    at = torch.arange(length)[None, :]
    return (at >= starts) & (at < first_block_end(starts, block))


def decision_weights(prompt_lengths: list[int], length: int, block: int, weight: float,
                     per_answer: bool = False) -> torch.Tensor:
    """[B, T] loss weights: 1, and `weight` on each example's decision block. How many answer positions that block
    holds depends on where the prompt ends (1 to `block`), so a weight per position makes an answer whose prompt
    leaves it one position count 1/32 as much as one that leaves it 32, though the app decides each answer once.
    `per_answer` (train.py --decision-per-answer) spreads `weight` x half a block over each example's decision
    block instead, the same in all for every answer (an example's masked share of them is in the loss)."""
    decision = decision_block(prompt_lengths, length, block)
    if not per_answer:
        return 1 + (weight - 1) * decision.float()
    starts = torch.tensor(prompt_lengths)[:, None]
    held = (first_block_end(starts, block) - starts).float()
    return torch.where(decision, weight * (block / 2) / held, torch.ones_like(held))


def user_text_span(prompt: list[int], role_close: int, role_end: int) -> tuple[int, int]:
    """[start, end) of the last message's text in a LLaDA-2 prompt: after the `</role>` that opens it, before
    its `<|role_end|>` (the generation prompt, `<role>ASSISTANT</role>`, follows). (0, 0) when there is none."""
    ends = [i for i, token in enumerate(prompt) if token == role_end]
    if not ends:
        return 0, 0
    opens = [i for i, token in enumerate(prompt[:ends[-1]]) if token == role_close]
    return (opens[-1] + 1, ends[-1]) if opens else (0, 0)


def llada_batch(group: list[Encoded], block: int, eos: int, mask: int, generator: torch.Generator,
                fully_noised: float = FULLY_NOISED, prompt_dropout: float = 0.0,
                roles: tuple[int, int] | None = None, edit_noise: float = 0.0, vocab: int = 0) -> LLaDABatch:
    """`roles` = the `</role>` and `<|role_end|>` ids, needed when `prompt_dropout` > 0; `vocab`, when
    `edit_noise` > 0."""
    lengths = [llada_length(e, block) for e in group]
    length = max(lengths)
    clean = torch.full((len(group), length), eos, dtype=torch.long)
    answer_at = torch.zeros((len(group), length), dtype=torch.bool)
    for row, example in enumerate(group):
        ids = example.prompt + example.answer
        clean[row, :len(ids)] = torch.tensor(ids)
        answer_at[row, len(example.prompt):lengths[row]] = True  # the answer and the EOS fill of its block
    levels = noise_levels((len(group), length // block), fully_noised, generator).clamp(min=1e-3)
    t = levels.repeat_interleave(block, dim=1)
    masked = answer_at & (torch.rand(t.shape, generator=generator) < t)
    context = None
    if prompt_dropout > 0:   # drawn after the answer's noise, which stays what it is without dropout
        text = torch.zeros_like(answer_at)
        for row, example in enumerate(group):
            start, end = user_text_span(example.prompt, *roles)
            text[row, start:end] = True
        hidden = text & (torch.rand(t.shape, generator=generator) < prompt_dropout)
        context = torch.where(hidden, torch.full_like(clean, mask), clean)
    noisy = torch.where(masked, torch.full_like(clean, mask), clean if context is None else context)
    in_loss = masked
    if edit_noise > 0:   # drawn last, so the other draws stay what they are without it
        swapped = answer_at & ~masked & (torch.rand(t.shape, generator=generator) < edit_noise)
        wrong = slips(clean, generator, vocab)
        noisy = torch.where(swapped & (wrong != mask), wrong, noisy)
        in_loss = answer_at
    return LLaDABatch(clean, context, noisy, masked, in_loss, lengths, [len(e.prompt) for e in group])
