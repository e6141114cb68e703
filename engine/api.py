"""`engine.generate`: one entry point for both families, yielding typed events (engine.events)."""

from __future__ import annotations

import importlib
from typing import Iterator, Sequence

from .errors import InputError
from .events import Event
from .fill import as_template, tokenize
from .families import FAMILIES
from .settings import Settings


def generate(
    model,
    messages: Sequence[dict] | None = None,
    prompt_ids: Sequence[int] | None = None,
    settings: Settings | None = None,
    think: bool = False,
    randomness=None,
    cancel=None,
    session=None,
    images: Sequence[str] | None = None,
    fill=None,
    record: bool = False,
) -> Iterator[Event]:
    """Generate a reply.

    Give chat `messages` (role/content dicts; content is a string or a list of {"type": "text"|"image"} items)
    or pre-tokenized `prompt_ids`. `settings` fields left as None take the checkpoint's defaults. `think` asks
    the chat template for the reasoning channel.
    `randomness` replaces the seeded default draws (see engine.randomness). `cancel` is anything with
    `is_set()`, checked every denoising step. `session` (engine.Session) keeps the encoder cache of a
    conversation so the next turn encodes only its new tokens. `images` are paths attached to the last
    user message (DiffusionGemma with a vision tower only).
    `fill` (an `engine.fill.FillTemplate`, or text with `___` / `[...]` holes) makes the answer that template:
    its given text stays fixed and only the holes are denoised; `max_tokens` does not apply, the answer ends
    when the template is filled, and `Finished.filled_spans` says where the fillings are. A fill has no
    thinking channel (`think` must be off).
    `record` attaches the generation's trajectory (engine.trajectory, bytes) to `Finished.trajectory`.
    """
    settings = (settings or Settings()).validated()
    if (messages is None) == (prompt_ids is None):
        raise InputError("give either messages or prompt_ids")
    template = None
    if fill is not None:
        template = as_template(fill)
        if think:
            raise InputError("a fill answer has no thinking channel: turn thinking off to fill a template")
    extra = {}
    if messages is not None:
        prompt = model.tokenizer.prepare_chat(messages, think=think, images=images, processor=model.processor)
        prompt_ids = prompt.ids
        if prompt.pixel_values:
            extra = {"pixel_values": prompt.pixel_values, "token_type_ids": prompt.token_type_ids}
    else:
        prompt_ids = [int(t) for t in prompt_ids]
        if images:
            raise InputError("images need chat messages, not prompt_ids")
    if not prompt_ids:
        raise InputError("the prompt is empty")
    return _start(model, list(prompt_ids), settings, randomness, cancel, session, template, record, **extra)


def _start(model, prompt_ids: list[int], settings: Settings, randomness, cancel, session, template=None,
           record=False, pixel_values=None, token_type_ids=None):
    """Everything a request is checked for happens here, once, before the first event; the block loop
    (engine.generation.driver) then trusts its ids."""
    from .generation.common import stop_ids
    from .generation.driver import run
    from .randomness import SeededRandomness

    network = model.network
    vocab = network.vocab_size
    if any(not 0 <= t < vocab for t in prompt_ids):
        raise InputError(f"prompt ids must be in [0, {vocab})")
    family = importlib.import_module(FAMILIES[model.family].generation)

    def randomness_for(seed: int):
        return randomness if randomness is not None else SeededRandomness(seed, vocab)

    denoiser, plan = family.build(model, settings, randomness_for, pixel_values, token_type_ids)
    canvas = None
    if template is not None:
        canvas = tokenize(template, model.tokenizer.encode_text, vocab, max_hole=denoiser.fill_layout()[0])
    stops = stop_ids(network.eos_token_ids, model.generation_config.get("eos_token_id"),
                     model.tokenizer.eos_ids if model.tokenizer is not None else None)
    return run(denoiser, prompt_ids, plan.max_tokens, stops, model.tokenizer, cancel, session, canvas)
