"""The one rule for how long a request may be: the prompt and the answer must fit the model's context.

Plain Python (no MLX), so a UI can apply it before sending; the engine applies it to every request
(`engine.generation.api`), before any work, and its verdict is the one that counts.
"""

from __future__ import annotations

from ..errors import InputError, SettingsError


def fit_max_tokens(prompt_tokens: int, max_tokens: int, max_tokens_given: bool, context_length: int | None) -> int:
    """The `max_tokens` a request runs with, or a one-line refusal.

    * The prompt must leave room for at least one answer token, else `InputError` naming both numbers.
    * prompt + max_tokens must fit. A `max_tokens` the person chose is a promise of how much may be written:
      generating less would look like the model stopping early, so a request that cannot keep it is refused
      (`SettingsError` naming the prompt's tokens, `max_tokens` and the context, so a front end can name its
      flag or field). A `max_tokens` nobody chose (the checkpoint's default, e.g. 256) is only a habit of the
      checkpoint: refusing a prompt over it would be unhelpful, so it is clamped to what fits.

    The last block may still reach a few positions past prompt + max_tokens (a block or canvas is written
    whole; the positions past `max_tokens` are never emitted). RoPE positions past the trained length still
    compute; only the answer's quality is not promised there, and no emitted token sits there.
    """
    if context_length is None:
        return max_tokens
    if prompt_tokens >= context_length:
        raise InputError(
            f"the prompt is {prompt_tokens:,} tokens but the model's context is {context_length:,} tokens "
            "(and the answer needs room too); shorten it or start a new conversation")
    room = context_length - prompt_tokens
    if max_tokens <= room:
        return max_tokens
    if not max_tokens_given:
        return room
    raise SettingsError(
        f"the prompt ({prompt_tokens:,} tokens) plus {{0}} ({max_tokens:,}) is {prompt_tokens + max_tokens:,} "
        f"tokens, more than the model's context of {context_length:,}; set {{0}} to at most {room:,} or "
        "shorten the prompt", "max_tokens")
