"""`engine.generate`: one entry point for both families, yielding typed events (engine.events)."""

from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

from .context import fit_max_tokens
from ..thread import release
from ..errors import EngineError, InputError
from ..events import BlockCommitted, Event, Finished, Prefilling, Step
from .fill import as_template, tokenize
from ..models.families import FAMILIES
from ..settings import Settings
from ..thread.release import own_this_thread


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
    progress=None,
    fill=None,
    record: bool = False,
    batched: bool = False,
) -> Iterator[Event]:
    """Generate a reply.

    Give chat `messages` (role/content dicts; content is a string or a list of {"type": "text"|"image"} items)
    or pre-tokenized `prompt_ids`. `settings` fields left as None take the checkpoint's defaults. `think` asks
    the chat template for the reasoning channel.
    `randomness` replaces the seeded default draws (see engine.generation.randomness). `cancel` is anything with
    `is_set()`, checked every denoising step. `session` (engine.Session) keeps the encoder cache of a
    conversation so the next turn encodes only its new tokens. `images` are paths attached to the last
    user message (DiffusionGemma with a vision tower only). `progress(event)` receives an
    `engine.events.Prefilling` after each encoder pass of a long prompt but the last (on this thread, before
    `Started`), so a front end can show that a long prompt is being read.
    `fill` (an `engine.generation.fill.FillTemplate`, or text with `___` / `[...]` holes) makes the answer that template:
    its given text stays fixed and only the holes are denoised; `max_tokens` does not apply, the answer ends
    when the template is filled, and `Finished.filled_spans` says where the fillings are. A fill has no
    thinking channel (`think` must be off).
    `record` attaches the generation's trajectory (engine.recording.trajectory, bytes) to `Finished.trajectory`.
    `batched` leaves the decoder passes to the caller: the stream then also yields
    `engine.generation.forward.DenoiseCall`s, and the logits of each are sent back into it (a batch scheduler
    answers several streams' calls with one forward). Not with `record`.
    """
    own_this_thread()  # a thread that builds MLX state releases it when it ends (engine.thread.release)
    if release.shutting_down():
        raise EngineError("the program is exiting: no new generation starts")
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
    if batched and record:
        raise InputError("a batched generation cannot be recorded")
    # Ended at its next event when the interpreter exits mid-generation (engine.thread.release explains the abort).
    return release.stop_at_shutdown(_start(model, list(prompt_ids), settings, randomness, cancel, session,
                                           progress, template, record, batched, **extra))


def _start(model, prompt_ids: list[int], settings: Settings, randomness, cancel, session, progress=None,
           template=None, record=False, batched=False, pixel_values=None, token_type_ids=None):
    """Everything a request is checked for happens here, once, before the first event and before any work: ids
    in the vocabulary, the family's settings, and prompt + max_tokens (or a fill's template) within the context
    (engine.generation.context). The block loop (engine.generation.driver) then trusts them."""
    from .common import stop_ids
    from .driver import run
    from .forward import answered
    from .randomness import SeededRandomness
    from ..recording.replay import RecordingRandomness
    from ..recording.trajectory import TrajectoryRecorder

    network = model.network
    vocab = network.vocab_size
    if any(not 0 <= t < vocab for t in prompt_ids):
        raise InputError(f"prompt ids must be in [0, {vocab})")
    family = FAMILIES[model.family].generation()
    recorders = []

    def randomness_for(seed: int):
        chosen = randomness if randomness is not None else SeededRandomness(seed, vocab)
        if record:
            recorders.append(RecordingRandomness(chosen, TrajectoryRecorder({}, prompt_ids)))
            return recorders[-1]
        return chosen

    plan = family.plan_for(model, settings)
    if template is None:
        fitting = fit_max_tokens(len(prompt_ids), plan.max_tokens, settings.max_tokens is not None,
                                 network.context_length)
        if fitting != plan.max_tokens:  # the checkpoint's default max_tokens, clamped to the room left
            plan = family.plan_for(model, settings.replace(max_tokens=fitting))
    denoiser = family.build(model, plan, randomness_for, pixel_values, token_type_ids)
    canvas = None
    if template is not None:
        canvas = tokenize(template, model.tokenizer.encode_text, vocab, max_hole=denoiser.fill_layout()[0])
        # A fill's answer is its template, whatever max_tokens says: that must fit.
        fit_max_tokens(len(prompt_ids), len(canvas.ids), True, network.context_length)
    stops = stop_ids(network.eos_token_ids, model.generation_config.get("eos_token_id"),
                     model.tokenizer.eos_ids if model.tokenizer is not None else None)
    passes = None if progress is None else (lambda done, total: progress(Prefilling(done, total)))
    events = run(denoiser, prompt_ids, plan.max_tokens, stops, model.tokenizer, cancel, session, passes, canvas)
    if batched:
        return events
    events = answered(events, network)
    if not record:
        return events
    recording = recorders[-1]
    # DiffusionGemma's confidence-threshold sampler reads sampled proposals the recorded canvases do not hold.
    recording.keep_proposals = getattr(plan, "diffusion_sampler", None) == "confidence-threshold" and plan.temp > 0
    recorder = recording.recorder
    recorder.fill = None if canvas is None else (canvas.ids, canvas.hole)
    recorder.meta = {"family": model.family, "model": getattr(model, "name", ""), "settings": settings.to_dict(),
                     "seed": plan.seed, "plan": dataclasses.asdict(plan), "images": pixel_values is not None}
    token_text = model.tokenizer.token_text if model.tokenizer is not None else None
    return _recorded(events, recorder, token_text)


def _recorded(events, recorder, token_text):
    """The events, with every Step and block noted and the encoded trajectory attached to Finished."""
    for event in events:
        if isinstance(event, Step):
            recorder.step(event)
        elif isinstance(event, BlockCommitted):
            recorder.block(event)
        elif isinstance(event, Finished):
            event = dataclasses.replace(event, trajectory=recorder.encode(event, token_text))
        yield event
