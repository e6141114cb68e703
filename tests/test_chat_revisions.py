"""Regenerate (revisions), edit and resend (branches), the system prompt and the per-step numbers, in the chat
session without Textual."""

from __future__ import annotations

import dataclasses

import numpy as np

from engine.events import BlockCommitted, Frame, GenerationUpdate
from engine.settings import Settings
from tui.session import ChatSession
from tui.session.conversation_path import Place
from tui.session.live_steps import LiveSteps
from tui.store import ConversationStore

from session_helpers import MODEL, FakeBackend, FakeView, answer, parts, step  # noqa: F401  (parts is a fixture)


async def test_regenerate_writes_a_revision_with_the_current_settings_and_switching_shows_each(parts):
    session, store, view, backend, *_ = parts
    current = {"settings": Settings(temp=0.5)}
    session.settings_for = lambda family: current["settings"]
    await session.send("hi")
    await answer(session, "first answer", blocks=2)
    first_request = backend.requests[0]
    (message_id,) = [m.id for m in session.messages if m.role == "assistant"]
    current["settings"] = Settings(temp=0.9)
    assert await session.regenerate()
    # The same prompt again, with the current settings; the shown answer is written again in place.
    request = backend.requests[1]
    assert request.messages == first_request.messages and request.settings == Settings(temp=0.9)
    assert view.named("start_answer")[-1] == (message_id,)
    await answer(session, "second answer", encoded=1)
    assert view.places[-1] == Place(message_id, 2, 2)
    revisions = store.revisions(message_id)
    assert [(r.number, r.content, r.settings) for r in revisions] == [
        (1, "first answer", {"temp": 0.5}), (2, "second answer", {"temp": 0.9})]
    assert revisions[0].stats["accepted_per_step"] == [[3, 1], [3, 2]] and revisions[0].stats["steps_per_block"] == [4, 4]
    assert revisions[1].stats["encoded_tokens"] == 1 and revisions[1].stats["prompt_tokens"] == 3
    # Still one answer on the path, showing the newest revision; the next turn continues from it.
    assert [m.content for m in store.get(session.conversation_id).messages] == ["hi", "second answer"]
    assert session.history[-1] == {"role": "assistant", "content": "second answer"}
    await session.switch_revision(message_id, -1)
    assert view.named("show_answer")[-1] == ("first answer", Place(message_id, 1, 2))
    assert session.history[-1]["content"] == "first answer" and session.last_answer == "first answer"
    assert store.get_message(message_id).revision == 1  # saved: a restart shows the same
    await session.switch_revision(message_id, -1)
    assert "no other one" in view.named("notify")[-1][0] and len(view.named("show_answer")) == 1
    shown, all_revisions = session.answer_revisions()
    assert shown.id == message_id and [r.number for r in all_revisions] == [1, 2]


async def test_regenerate_refuses_without_an_answer_and_while_writing(parts):
    session, _, view, backend, *_ = parts
    assert not await session.regenerate()
    assert "no answer to regenerate" in view.named("notify")[-1][0]
    await session.send("hi")
    assert not await session.regenerate()
    assert len(backend.requests) == 1 and "still being written" in view.named("notify")[-1][0]
    assert session.answer_revisions() is None  # nothing saved to compare yet


async def test_the_answer_being_regenerated_cannot_switch_revision_meanwhile(parts):
    session, store, view, *_ = parts
    await session.send("hi")
    await answer(session, "one")
    message_id = session.messages[-1].id
    await session.regenerate()
    await session.switch_revision(message_id, -1)
    assert "being written again" in view.named("notify")[-1][0]
    await answer(session, "two")
    assert [r.content for r in store.revisions(message_id)] == ["one", "two"]


async def test_edit_and_resend_continues_from_the_edit_and_keeps_the_old_branch(parts):
    session, store, view, backend, *_ = parts
    await session.send("first question")
    await answer(session, "first answer")
    await session.send("second question")
    await answer(session, "second answer")
    edited = session.messages[2]
    assert await session.resend(edited.id, "second question, better")
    # The history is rebuilt from the new path: everything before the edit, then the edit.
    assert [m["content"] for m in backend.requests[-1].messages] == ["first question", "first answer",
                                                                      "second question, better"]
    assert view.named("show_conversation")[-1][1] == ("first question", "first answer")
    new_id = session.messages[-1].id
    assert view.named("show_user")[-1] == ("second question, better", (), Place(new_id, 2, 2))
    await answer(session, "better answer")
    assert [m.content for m in store.get(session.conversation_id).messages] == [
        "first question", "first answer", "second question, better", "better answer"]
    assert [m.content for m in store.siblings(edited.id)] == ["second question", "second question, better"]
    # The old branch is one key away, with its answer, and becomes what the next turn continues.
    await session.switch_branch(new_id, -1)
    assert view.named("show_conversation")[-1][1] == ("first question", "first answer", "second question",
                                                     "second answer")
    assert view.shown_places[edited.id] == Place(edited.id, 1, 2)
    assert view.named("focus_message")[-1] == (edited.id,)
    assert session.history[-1]["content"] == "second answer"
    await session.switch_branch(edited.id, -1)
    assert "Branch 1 of 2" in view.named("notify")[-1][0]
    await session.open(session.conversation_id)  # as a restart would
    assert session.messages[2].content == "second question"


async def test_resend_refuses_a_message_off_the_path_and_while_writing(parts):
    session, _, view, backend, *_ = parts
    await session.send("question")
    assert not await session.resend(session.messages[0].id, "edited")  # still writing
    await answer(session, "answer")
    assert not await session.resend(12345, "edited")
    assert "no longer on this conversation's path" in view.named("notify")[-1][0]
    await session.send("more")
    await session.switch_branch(session.messages[0].id, 1)
    assert "when it is done" in view.named("notify")[-1][0] and len(backend.requests) == 2


async def test_the_system_prompt_is_sent_first_saved_changed_and_reset_for_a_new_conversation():
    store, view, backend = ConversationStore(":memory:"), FakeView(), FakeBackend()
    session = ChatSession(store, backend, view, lambda family: Settings(), system_prompt="  Be brief. ")
    session.set_model(MODEL)
    await session.open(None)
    assert view.named("show_system_prompt")[-1] == ("Be brief.",)
    await session.send("hi")
    assert backend.requests[0].messages == ({"role": "system", "content": "Be brief."},
                                            {"role": "user", "content": "hi"})
    assert store.get(session.conversation_id).system_prompt == "Be brief."
    await answer(session, "ok")
    session.set_system_prompt("Answer in French.\nAlways.")
    assert store.get(session.conversation_id).system_prompt == "Answer in French.\nAlways."
    await session.send("again")
    assert backend.requests[1].messages[0] == {"role": "system", "content": "Answer in French.\nAlways."}
    await answer(session, "d'accord")
    session.set_system_prompt("   ")
    assert store.get(session.conversation_id).system_prompt is None
    assert "removed" in view.named("notify")[-1][0] and view.named("show_system_prompt")[-1] == (None,)
    await session.regenerate()
    assert backend.requests[2].messages[0]["role"] == "user"  # none any more
    await answer(session, "fine")
    conversation = session.conversation_id
    await session.open(None)
    assert session.system_prompt == "Be brief."      # `--system` is the default of every new conversation
    await session.open(conversation)
    assert session.system_prompt is None
    store.close()


async def test_each_committed_block_shows_its_accepted_per_step_and_the_live_block_a_curve(parts):
    session, store, view, backend, wall, _ = parts
    await session.send("hi")
    job = session.generation.job
    backend.latest_frame = Frame(job, step(0, 0))
    session.poll()
    assert view.named("show_live_steps")[-1] == ((1,),)
    await session.handle(GenerationUpdate(job, BlockCommitted(0, (1,), (1,), "a", "", 2, "max_denoising_steps",
                                                              (5, 3))))
    await session.handle(GenerationUpdate(job, BlockCommitted(1, (), (), "", "", 1, "cancelled", (2,))))
    # The cancelled block enters nothing shown, but its steps are counted in the saved stats.
    assert view.named("show_block_steps") == [("answer-1", 0, (5, 3), 0)]
    await answer(session, "a")
    assert view.named("show_live_steps")[-1] == ((),)  # cleared at the end
    saved = store.get(session.conversation_id).messages[-1]
    assert saved.stats["accepted_per_step"][:2] == [[5, 3], [2]]


def test_the_live_curve_shares_missed_steps_growth_and_restarts_per_block():
    def frame(block, index, accepted, newly):
        return dataclasses.replace(step(block, index, length=16), accepted=np.arange(16) < accepted,
                                   newly_accepted=newly)

    live = LiveSteps()
    assert live.see(frame(0, 0, 2, 2)) == [2]
    # Steps 1-3 were not seen: the 9 positions they accepted (13 - 2 before - 2 by step 4) are shared out.
    assert live.see(frame(0, 4, 13, 2)) == [2, 3, 3, 3, 2]
    assert live.see(frame(0, 4, 13, 2)) == [2, 3, 3, 3, 2]  # the same frame again counts once
    assert live.see(frame(1, 1, 4, 1)) == [3, 1]           # a new block starts a new curve
