"""The time left to read a long prompt: the fit follows a cost per pass that grows with what is cached, and
the chat's status line shows it next to the progress."""

from __future__ import annotations

import pytest

from engine.events import GenerationUpdate, Prefilling
from engine.settings import Settings
from tui.session import ChatSession
from tui.session.prefill_eta import PrefillEstimate, eta_text
from tui.store import ConversationStore

from session_helpers import MODEL, Clock, FakeBackend, FakeView


def read_time(done: float, a: float = 1e-4, b: float = 2e-9) -> float:
    """Seconds to have read `done` tokens when each token costs a + b * (its position)."""
    return a * done + b * done * done / 2


def test_the_estimate_extrapolates_a_cost_that_grows_with_the_cache():
    estimate, total = PrefillEstimate(), 145_844
    for done in range(4096, 40_000, 4096):
        estimate.observe(done, total, read_time(done))
    truth = read_time(total) - read_time(36_864)
    assert estimate.remaining_s() == pytest.approx(truth, rel=1e-6)
    straight_line = read_time(36_864) / 36_864 * (total - 36_864)
    assert straight_line < 0.8 * truth    # what a plain rate would have promised


def test_one_pass_seen_assumes_the_rate_stays_and_nothing_before_it():
    estimate = PrefillEstimate()
    assert estimate.remaining_s() is None and eta_text(None) == ""
    estimate.observe(1000, 5000, 2.0)
    assert estimate.remaining_s() == pytest.approx(8.0)
    assert (eta_text(8.4), eta_text(80), eta_text(4000)) == ("about 8 s left", "about 1 min 20 s left",
                                                             "about 1 h 06 min left")


async def test_the_status_line_shows_the_time_left_while_a_long_prompt_is_read():
    store, view, clock = ConversationStore(":memory:"), FakeView(), Clock()
    session = ChatSession(store, FakeBackend(), view, lambda family: Settings(), clock=clock)
    session.set_model(MODEL)
    assert await session.send("a long document")
    job, start = session.generation.job, clock.now
    for done in (8192, 16_384, 24_576):
        clock.now = start + read_time(done, a=2e-4)
        await session.handle(GenerationUpdate(job, Prefilling(done, 145_844)))
    line = view.named("show_activity")[-1][0]
    left = read_time(145_844, a=2e-4) - read_time(24_576, a=2e-4)
    assert line.startswith("reading the prompt… 24,576 / 145,844 tokens · about ")
    assert eta_text(left) in line
    store.close()
