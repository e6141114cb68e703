"""Fakes for the chat session's unit tests: a view that records its calls, a backend that records requests,
fake clocks, and small Step / Stats / event builders."""

from __future__ import annotations

import numpy as np
import pytest

from engine.events import BlockCommitted, Finished, GenerationUpdate, ModelInfo, Started, Stats, Step
from engine.settings import Settings
from tui.session import ChatSession
from tui.store import ConversationStore

MODEL = ModelInfo(name="tiny", family="diffusion_gemma", label="DiffusionGemma", supports_images=False,
                  setting_defaults={"max_tokens": 64})


class FakeView:
    def __init__(self):
        self.calls: list[tuple] = []
        self.live = False
        self.places = []          # what each finished answer was saved as
        self.shown_places = {}

    def __getattr__(self, name):  # every ChatView method records its call
        def record(*args):
            self.calls.append((name, *args))
        return record

    async def show_user(self, message, labels, place):
        self.calls.append(("show_user", message.content, tuple(labels), place))

    async def start_answer(self, message_id):
        self.calls.append(("start_answer", message_id))
        return f"answer-{len(self.named('start_answer'))}"

    async def add_text(self, answer, content, reasoning):
        self.calls.append(("add_text", answer, content, reasoning))

    async def finish_answer(self, answer, status, note, place):
        self.calls.append(("finish_answer", answer, status, note))
        self.places.append(place)

    async def show_answer(self, message, place):
        self.calls.append(("show_answer", message.content, place))

    async def show_conversation(self, conversation, places):
        self.calls.append(("show_conversation", conversation.id if conversation else None,
                           tuple(m.content for m in conversation.messages) if conversation else ()))
        self.shown_places = dict(places)

    def set_live(self, live):
        self.live = live

    def named(self, name):
        return [call[1:] for call in self.calls if call[0] == name]


class FakeBackend:
    def __init__(self):
        self.requests, self.cancelled, self.forgotten = [], [], []
        self.latest_frame = None

    def generate(self, request):
        self.requests.append(request)
        return len(self.requests)

    def cancel(self, job):
        self.cancelled.append(job)

    def forget(self, conversation):
        self.forgotten.append(conversation)


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def step(block: int, index: int, length: int = 8) -> Step:
    return Step(block=block, step=index, max_steps=8, canvas=np.zeros(length, np.int32),
                candidates=np.zeros(length, np.int32), accepted=np.arange(length) <= index, newly_accepted=1,
                scores=np.zeros(length, np.float32), score_kind="entropy", temperature=None, noise_is_mask=False)


def stats(blocks: int = 1) -> Stats:
    return Stats(steps_per_block=(4,) * blocks, prompt_tokens=3, generated_tokens=5, work_tokens=32, prefill_s=0.1,
                 denoise_s=0.2, total_s=0.5, peak_memory_bytes=0)


@pytest.fixture
def parts():
    store = ConversationStore(":memory:")
    view, backend, wall, cpu = FakeView(), FakeBackend(), Clock(), Clock()
    session = ChatSession(store, backend, view, lambda family: Settings(temp=0.5), clock=wall, cpu_clock=cpu)
    session.set_model(MODEL)
    yield session, store, view, backend, wall, cpu
    store.close()




async def answer(session, content: str, *, blocks: int = 1, reasoning: str = "", encoded: int = 3) -> None:
    """Play a whole generation of the current job into the session: Started, blocks, Finished."""
    job = session.generation.job
    await session.handle(GenerationUpdate(job, Started(3, encoded, 0.1, 8)))
    for block in range(blocks):
        await session.handle(GenerationUpdate(job, BlockCommitted(block, (1,), (1,), content if block == 0 else "", "",
                                                                  2, "max_denoising_steps", (3, block + 1))))
    await session.handle(GenerationUpdate(job, Finished("stop", (1,), content, reasoning, stats(blocks))))
