"""A denoiser asks for its decoder passes instead of running them, so that one caller may answer a single
generation's passes at once (`answered`) and a batch scheduler may answer several generations' passes with one
batched forward (`forward_all`).

Inside `denoise_block` a pass is `logits = yield DenoiseCall(canvas, cache, options)`: the request travels up the
event stream beside the `Step` events, and the value sent back is what `network.denoise` returns ([1, L, V]).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generator, Iterator, Sequence

if TYPE_CHECKING:   # the server's modules import this without loading MLX until the model loads
    import mlx.core as mx


@dataclass(frozen=True)
class DenoiseCall:
    """One decoder pass a denoiser needs: `network.denoise(canvas, cache, **options)`."""

    canvas: mx.array                  # [1, L] int32
    cache: Any                        # the request's own prefix cache (read, never written)
    options: dict = field(default_factory=dict)   # self_conditioning, softcap

    def run(self, network) -> mx.array:
        return network.denoise(self.canvas, self.cache, **self.options)


def answered(events: Generator, network) -> Iterator:
    """The event stream of one generation on its own: every `DenoiseCall` is run at once and its logits sent
    back; every other event is passed on. Closing this closes the generation (a consumer that stops early)."""
    reply = None
    try:
        while True:
            try:
                item = events.send(reply)
            except StopIteration:
                return
            if isinstance(item, DenoiseCall):
                reply = item.run(network)
                continue
            reply = None
            yield item
    finally:
        events.close()


def forward_all(network, calls: Sequence[DenoiseCall]) -> list[mx.array]:
    """Each call's logits, in order: one batched forward where the network has one (`denoise_many`), else one
    pass per call."""
    if len(calls) == 1 or not hasattr(network, "denoise_many"):
        return [call.run(network) for call in calls]
    return network.denoise_many(calls)
