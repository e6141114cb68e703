"""An answer whose model stopped while still thinking (the thought never closed, or the token budget ran out in
it) has no text of its own: the app says so under it instead of leaving a blank answer, live and reopened."""

from __future__ import annotations

from textual.widgets import Static

from tui_helpers import (ScriptedAnswer, app_env, make_app, scripted_block, scripted_turn,  # noqa: F401 (app_env)
                         scripted_worker, wait_for, wait_for_model)
from tui.widgets.messages import AssistantMessage, status_note

NOTE = "⚠ no answer: the model stopped while still thinking"


def test_the_note_is_for_a_finished_answer_with_reasoning_and_no_text():
    assert status_note("complete", "", "The user is thanking me.") == NOTE
    assert status_note("complete", "You're welcome!", "The user is thanking me.") == ""
    assert status_note("complete", "", "") == ""   # nothing at all: no thinking to blame
    assert status_note("cancelled", "", "Half a thought").startswith("⏹ cancelled")
    assert status_note("error", "", "Half a thought") == ""   # an error has its own line


async def test_an_answer_left_in_the_thought_says_so_live_and_reopened(app_env):
    script = ScriptedAnswer([scripted_block(0, reasoning="The user is thanking me. You're welcome!")])
    app = make_app("dg_text", think=True, make_worker=scripted_worker(script))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_model(pilot)
        await scripted_turn(pilot, script, "omg it works now!!")
        answer = app.chat.query_one(AssistantMessage)
        assert answer.content == "" and not answer.thinking.collapsed   # the thought is what there is to read
        assert str(answer.query_one("#note", Static).content) == NOTE
        conversation = app.session.conversation_id
        await pilot.press("ctrl+n")
        await app._open_conversation(conversation)
        await wait_for(pilot, lambda: len(app.chat.query(AssistantMessage)) == 1, "the reopened answer")
        reopened = app.chat.query_one(AssistantMessage)
        assert str(reopened.query_one("#note", Static).content) == NOTE
