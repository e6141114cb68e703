"""The chat session's diffusion turns, without Textual: `/fill` turns, revising a span as a new revision,
recorded trajectories kept (and capped) with the answer, LLaDA-2.1 edits per block."""

from __future__ import annotations

import dataclasses

import pytest

from engine.events import BlockCommitted, Finished, GenerationUpdate, Started
from engine.generation.fill import Given, Hole, parse_fill, revision_template
from engine.settings import Settings
from tui.session import ChatSession
from tui.session.diffusion_turns import NO_RECORDING
from tui.store import ConversationStore

from session_helpers import MODEL, Clock, FakeBackend, FakeView, answer, parts, stats  # noqa: F401  (a fixture)


async def finish(session, content: str, *, spans=(), trajectory: bytes | None = None, edits=(0,)) -> None:
    """A whole generation of the current job: Started, one block per `edits` entry, Finished."""
    job = session.generation.job
    await session.handle(GenerationUpdate(job, Started(3, 1, 0.1, 8)))
    for block, count in enumerate(edits):
        await session.handle(GenerationUpdate(job, BlockCommitted(
            block, (1,), (1,), content if block == 0 else "", "", 2, "edits_settled", (3, 1), edits=count,
            filled_spans=spans)))
    await session.handle(GenerationUpdate(job, Finished("stop", (1,), content, "", stats(len(edits)),
                                                        filled_spans=spans, trajectory=trajectory)))


async def test_a_fill_turn_sends_the_template_without_thinking_and_saves_its_spans_and_recording(parts):
    session, store, view, backend, _, _ = parts
    session.toggle_thinking()
    session.set_recording(True)
    text = "The ___ sat on the [...]{3}."
    assert await session.send_fill(text)
    request = backend.requests[-1]
    assert request.fill == parse_fill(text) and request.think is False and request.record is True
    assert request.messages[-1] == {"role": "user", "content": text}
    # From its first block on the answer shows as text with its fillings highlighted.
    assert view.named("show_filled")[0] == ("answer-1", ())
    await finish(session, "The cat sat on the mat.", spans=((4, 7), (19, 22)), trajectory=b"recorded")
    assert view.named("show_filled")[-1] == ("answer-1", ((4, 7), (19, 22)))
    saved = store.get(session.conversation_id).messages
    assert [m.content for m in saved] == [text, "The cat sat on the mat."]
    assert saved[1].stats["fill"] == "fill" and saved[1].stats["filled_spans"] == [[4, 7], [19, 22]]
    assert store.load_trajectory(store.revisions(saved[1].id)[0].id) == b"recorded"
    assert session.recorded_trajectory(saved[1].id) == b"recorded"
    # Regenerating a filled template fills it again (the whole template, from the user's turn).
    assert await session.regenerate()
    assert backend.requests[-1].fill == parse_fill(text) and backend.requests[-1].think is False


@pytest.mark.parametrize("text, message", [
    ("no holes here", "has no hole"),
    ("a ___{0} hole", "length 0"),
    ("   ", "empty"),
    ("a ___{" + "9" * 5000 + "} hole", "longer than any block"),   # once a ValueError that closed the app
    ("a [...]{4097} hole", "longer than any block"),
    ("___{1} " * 10_001, "more than 10000 holes"),
])
async def test_a_text_the_template_syntax_refuses_is_one_notice_and_nothing_is_saved(parts, text, message):
    session, store, view, backend, _, _ = parts
    assert not await session.send_fill(text)
    notices = view.named("notify")
    assert len(notices) == 1 and message in notices[0][0] and notices[0][1] == "error"
    assert backend.requests == [] and store.list() == [] and session.generation is None


async def test_a_fill_or_a_revision_against_a_server_is_refused(parts):
    session, store, view, backend, _, _ = parts
    session.set_model(dataclasses.replace(MODEL, remote=True))
    assert not await session.send_fill("The ___ sat.")
    assert "local engine" in view.named("notify")[-1][0] and backend.requests == []


async def test_revising_a_span_asks_for_the_answers_own_prompt_and_saves_a_new_revision(parts):
    session, store, view, backend, _, _ = parts
    await session.send("first")
    await answer(session, "one two three")
    await session.send("second")
    await answer(session, "alpha beta gamma")
    target = session.messages[-1]
    # Only the last answer: the turns after an earlier one were written from it as it is.
    assert not await session.revise(session.messages[1].id, 0, 3)
    assert "Only the last answer" in view.named("notify")[-1][0] and len(backend.requests) == 2
    assert await session.revise(target.id, 6, 10)
    request = backend.requests[-1]
    # The messages that produced the answer, its text as the template (the span a hole), the same cache key.
    assert request.messages == ({"role": "user", "content": "first"}, {"role": "assistant", "content": "one two three"},
                                {"role": "user", "content": "second"})
    assert request.fill == revision_template("alpha beta gamma", 6, 10)
    assert request.fill.segments == (Given("alpha "), Hole(sized_like="beta"), Given(" gamma"))
    assert request.conversation == session.conversation_id and request.think is False
    assert view.named("start_answer")[-1] == (target.id,)
    await finish(session, "alpha BETA gamma", spans=((6, 10),))
    revisions = store.revisions(target.id)
    assert [r.content for r in revisions] == ["alpha beta gamma", "alpha BETA gamma"]
    assert revisions[1].stats["fill"] == "revise" and revisions[1].stats["filled_spans"] == [[6, 10]]
    assert session.messages[-1].revision == 2 and session.last_answer == "alpha BETA gamma"
    # Regenerating a revised answer writes it whole again (no template).
    assert await session.regenerate()
    assert backend.requests[-1].fill is None


async def test_a_revision_refuses_an_empty_span_an_answer_off_the_path_and_a_running_answer(parts):
    session, store, view, backend, _, _ = parts
    await session.send("hi")
    await answer(session, "hello")
    target = session.messages[-1]
    assert not await session.revise(target.id, 3, 3)
    assert "non-empty span" in view.named("notify")[-1][0]
    assert not await session.revise(target.id + 100, 0, 2)
    assert "no longer on this conversation's path" in view.named("notify")[-1][0]
    await session.send("again")
    assert not await session.revise(target.id, 0, 2)   # an answer is being written
    assert "still being written" in view.named("notify")[-1][0]
    assert len(backend.requests) == 2 and len(store.revisions(target.id)) == 1


async def test_recording_follows_the_setting_and_a_recording_over_the_cap_is_one_quiet_notice():
    store = ConversationStore(":memory:", trajectory_cap=10)
    view, backend = FakeView(), FakeBackend()
    session = ChatSession(store, backend, view, lambda family: Settings(), record=True, clock=Clock(),
                          cpu_clock=Clock())
    session.set_model(MODEL)
    await session.send("hi")
    assert backend.requests[-1].record is True
    await finish(session, "hello", trajectory=b"x" * 11)
    notice = view.named("notify")[-1]
    # One notice at the default (information) severity, naming the size, the cap and the setting.
    assert len(notice) == 1 and "(0.0 MiB) is over the 9.53674e-06 MiB cap" in notice[0]
    assert "trajectory_cap_mb" in notice[0]
    message = session.messages[-1]
    assert store.load_trajectory(store.revisions(message.id)[0].id) is None
    assert session.recorded_trajectory(message.id) is None and view.named("notify")[-1] == (NO_RECORDING,)
    session.set_recording(False)
    await session.send("again")
    assert backend.requests[-1].record is False
    store.close()


async def test_llada21_edits_are_shown_per_block_saved_and_summed_in_the_status(parts):
    session, store, view, backend, _, _ = parts
    await session.send("hi")
    await finish(session, "hello", edits=(3, 0, 2))
    assert [call[3] for call in view.named("show_block_steps")] == [3, 0, 2]
    assert session.messages[-1].stats["edits_per_block"] == [3, 0, 2]
    assert "5 edits" in view.named("show_activity")[-1][0]
    # Answers without edits save none.
    await session.send("again")
    await finish(session, "hello")
    assert "edits_per_block" not in session.messages[-1].stats
    assert "edits" not in view.named("show_activity")[-1][0]
