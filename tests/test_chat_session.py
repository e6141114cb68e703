"""The chat's turn logic without Textual: a fake view, a fake backend and fake clocks."""

from __future__ import annotations

from engine.events import BlockCommitted, Finished, Frame, GenerationFailed, GenerationUpdate, Started
from engine.settings import Settings
from tui.session.frame_pacer import MAX_FRAME_INTERVAL_S, STATUS_INTERVAL_S, UI_CPU_BUDGET, FramePacer

from session_helpers import MODEL, parts, stats, step  # noqa: F401  (parts is a fixture)

async def test_refusals_are_one_notice_and_send_nothing(parts):
    session, store, view, backend, *_ = parts
    session.set_model(None)
    assert not await session.send("hi")
    session.set_model(MODEL)
    assert not await session.send("look", images=["/tmp/cat.png"])  # a text-only model
    assert backend.requests == [] and store.list() == []
    assert [severity for _, severity in view.named("notify")] == ["warning", "error"]
    assert await session.send("hi")
    assert not await session.send("again")  # one answer at a time
    assert len(backend.requests) == 1 and "still being written" in view.named("notify")[-1][0]


async def test_a_turn_builds_the_request_and_saves_everything(parts):
    session, store, view, backend, *_ = parts
    session.toggle_thinking()
    assert await session.send("What is 2 + 2?")
    request = backend.requests[0]
    assert request.messages == ({"role": "user", "content": "What is 2 + 2?"},)
    assert (request.think, request.conversation, request.settings) == (True, session.conversation_id,
                                                                      Settings(temp=0.5))
    assert view.live and session.generation.token_budget == 64  # the checkpoint's default
    job = session.generation.job
    await session.handle(GenerationUpdate(job, Started(3, 3, 0.1, 8)))
    await session.handle(GenerationUpdate(job, BlockCommitted(0, (1, 2), (1, 2), "2 + 2 ", "add", 4,
                                                              "stable_and_confident")))
    await session.handle(GenerationUpdate(job, Finished("stop", (1, 2, 3), "2 + 2 = 4", "add them", stats(),
                                                        content_tail="= 4", reasoning_tail=" them")))
    # Blocks, then the held-back tail, reach the view in order; nothing is drawn twice.
    assert view.named("add_text") == [("answer-1", "2 + 2 ", "add"), ("answer-1", "= 4", " them")]
    assert view.named("finish_answer") == [("answer-1", "complete", "")]
    assert session.generation is None and not view.live
    saved = store.get(session.conversation_id).messages
    assert [(m.role, m.content, m.status) for m in saved] == [("user", "What is 2 + 2?", "complete"),
                                                              ("assistant", "2 + 2 = 4", "complete")]
    assert saved[1].reasoning == "add them" and saved[1].stats["finish_reason"] == "stop"
    assert store.revisions(saved[1].id)[0].settings == {"temp": 0.5}  # the settings it was made with
    assert session.history[-1] == {"role": "assistant", "content": "2 + 2 = 4"}
    assert session.last_answer == "2 + 2 = 4"


async def test_a_failed_answer_is_kept_but_never_sent_back(parts):
    session, store, view, backend, *_ = parts
    await session.send("hi")
    await session.handle(GenerationFailed(session.generation.job, "the model produced NaN"))
    assert view.named("finish_answer") == [("answer-1", "error", "⚠ the model produced NaN")]
    assert store.get(session.conversation_id).messages[-1].status == "error"
    assert session.history == [{"role": "user", "content": "hi"}]


async def test_events_of_other_jobs_are_ignored(parts):
    session, _, view, backend, *_ = parts
    await session.send("hi")
    await session.handle(GenerationUpdate(99, Finished("stop", (), "other", "", stats())))
    assert session.generation is not None and view.named("finish_answer") == []


async def test_frames_follow_the_cpu_budget(parts):
    session, _, view, backend, wall, cpu = parts
    await session.send("hi")
    job = session.generation.job
    backend.latest_frame = Frame(job, step(0, 0))
    session.poll()  # the first frame of a block: at once
    assert len(view.named("show_frame")) == 1
    cpu.now += 0.004  # drawing it cost 4 ms of UI CPU
    backend.latest_frame = Frame(job, step(0, 1))
    wall.now += 0.1
    session.poll()  # 0.1 s < 4 ms / 2 %: not yet
    assert len(view.named("show_frame")) == 1
    wall.now += 0.004 / UI_CPU_BUDGET
    session.poll()
    assert len(view.named("show_frame")) == 2
    # A frame of another job, and a frame of a block already committed, are never drawn.
    backend.latest_frame = Frame(job + 1, step(1, 0))
    wall.now += 5
    session.poll()
    await session.handle(GenerationUpdate(job, BlockCommitted(0, (1,), (1,), "x", "", 2, "max_denoising_steps")))
    backend.latest_frame = Frame(job, step(0, 3))
    wall.now += 5
    session.poll()
    assert len(view.named("show_frame")) == 2
    assert "reading the prompt" in view.named("show_activity")[-1][0]  # the status bar still moves


def test_the_pacer_never_waits_longer_than_its_cap_and_moves_the_status_bar():
    pacer = FramePacer(now=0.0, cpu=0.0)
    assert pacer.due(0.0, 0.0, is_new=True, first_of_block=True)
    assert not pacer.due(MAX_FRAME_INTERVAL_S - 0.01, 10.0, is_new=True, first_of_block=False)
    assert pacer.due(MAX_FRAME_INTERVAL_S, 10.0, is_new=True, first_of_block=False)  # capped
    assert not pacer.due(STATUS_INTERVAL_S - 0.01, 0.0, is_new=False, first_of_block=False)
    assert pacer.due(STATUS_INTERVAL_S, 0.0, is_new=False, first_of_block=False)


async def test_switching_away_detaches_the_answer_which_still_lands_in_its_conversation(parts):
    session, store, view, backend, *_ = parts
    await session.send("first question")
    first, job = session.conversation_id, session.generation.job
    generation = session.generation
    await session.open(None)
    assert backend.cancelled == [job] and session.conversation_id is None
    session.writer.generation = generation  # the engine's last events for it still arrive
    await session.handle(GenerationUpdate(job, Finished("cancelled", (), "partial", "", stats())))
    assert store.get(first).messages[-1].content == "partial"
    assert view.named("finish_answer") == []  # nothing drawn into the new conversation


async def test_deleting_forgets_the_backend_cache_and_thinking_is_saved(parts):
    session, store, view, backend, *_ = parts
    await session.send("hi")
    await session.handle(GenerationUpdate(session.generation.job, Finished("stop", (), "ok", "", stats())))
    conversation = session.conversation_id
    session.toggle_thinking()
    assert store.get(conversation).think is True and view.named("show_thinking")[-1] == (True,)
    await session.deleted(conversation)
    assert backend.forgotten == [conversation] and session.conversation_id is None
