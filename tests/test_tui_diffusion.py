"""What only a diffusion chat can do, driven with Pilot on the tiny checkpoints: `/fill` (the canvas keeps the
given text fixed, the transcript highlights the fillings), revise mode (a span written again in place as a
revision, the text around it byte for byte, the prefix cache serving the prompt), recorded trajectories and
the replay view, LLaDA-2.1 edits in the block stats."""

from __future__ import annotations

from textual.geometry import Offset
from textual.selection import Selection
from textual.widgets import Markdown

from engine.events import Started
from engine.recording.trajectory import decode
from tui.screens.help import HELP
from tui.screens.replay import ReplayScreen
from tui.widgets.answer_text import SpanSelector, offset_of
from tui.widgets.messages import AssistantMessage
from tui.words import count

from tui_helpers import (  # noqa: F401  (app_env is a fixture)
    engine_events,
    app_env,
    paced_worker,
    make_app,
    notices,
    open_replay,
    send,
    wait_for,
    wait_for_answer,
    wait_for_model,
    wait_for_screen,
)

SIZE = (110, 40)


def drawn_frames(app, monkeypatch) -> list:
    frames = []
    show = app.chat.show_frame

    def recording(answer, step, total_blocks):
        frames.append(step)
        show(answer, step, total_blocks)

    monkeypatch.setattr(app.chat, "show_frame", recording)
    return frames


async def test_fill_denoises_only_the_holes_and_the_transcript_highlights_the_fillings(app_env, monkeypatch):
    app = make_app("dg_text", think=True, make_worker=paced_worker, seed=2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        frames = drawn_frames(app, monkeypatch)
        requests, generate = [], app.engine_worker.generate
        monkeypatch.setattr(app.engine_worker, "generate", lambda request: requests.append(request) or generate(request))
        # A text the template syntax refuses: one notice, nothing saved, the text stays to be fixed.
        app.chat.prompt.value = "/fill nothing to fill"
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("no hole" in n for n in notices(app)), "the refusal")
        assert app.store.list() == [] and app.chat.prompt.value == "/fill nothing to fill"
        app.chat.prompt.value = "/fill a ___{0} hole"
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("length 0" in n for n in notices(app)), "the second refusal")
        assert app.store.list() == [] and not requests
        text = "The ___{4} sat on the [...]{3} all day."
        await send(pilot, f"/fill {text}")
        await wait_for_answer(pilot)
        saved = app.store.get(app.session.conversation_id).messages
        assert saved[0].content == text and saved[1].stats["fill"] == "fill"
        spans = [tuple(span) for span in saved[1].stats["filled_spans"]]
        content = saved[1].content
        assert content.startswith("The ") and content.endswith(" all day.") and " sat on the " in content
        assert content[:spans[0][0]] == "The " and content[spans[0][1]:spans[1][0]] == " sat on the "
        # The canvas drew the given text fixed (and said so), the holes resolving; thinking was off for the turn.
        assert frames and all(f.fixed is not None and f.fixed.any() for f in frames)
        assert requests[0].think is False and requests[0].fill is not None and requests[0].record is True
        assert saved[1].reasoning == "" and app.session.think is True
        answer = app.chat.query_one(AssistantMessage)
        assert answer.filled.display and not answer.query_one("#answer", Markdown).display
        assert answer.filled.spans == tuple(spans)
        rendered = answer.filled.render()
        highlighted = [(s.start, s.end) for s in rendered.spans]
        assert highlighted == [span for span in spans if span[1] > span[0]]
        # Reopened, the conversation highlights the same spans.
        conversation = app.session.conversation_id
        await pilot.press("ctrl+n")
        await app.session.open(conversation)
        await pilot.pause()
        reopened = app.chat.query_one(AssistantMessage)
        assert reopened.filled.display and reopened.filled.spans == tuple(spans)
        # The answer was recorded: ctrl+r replays it with the template's given text fixed.
        await pilot.press("ctrl+r")
        await wait_for_screen(pilot, ReplayScreen, "the replay view")
        replay = app.screen
        assert replay.trajectory.fill is not None and replay.frame_count == len(replay.trajectory.frames)
        assert "given" in replay.canvas.header_text()


async def test_revise_mode_writes_a_span_again_as_a_revision_keeping_the_rest_byte_for_byte(app_env, monkeypatch):
    app = make_app("dg_text", max_tokens=40, max_denoising_steps=6, make_worker=paced_worker, seed=1)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        started = engine_events(app, monkeypatch, Started)
        frames = drawn_frames(app, monkeypatch)
        await send(pilot, "hello there")
        await wait_for_answer(pilot)
        answer = app.chat.query_one(AssistantMessage)
        old = answer.content
        message_id = answer.message_id
        await pilot.press("ctrl+up")
        assert app.chat.focused is answer
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.chat.focused, SpanSelector), "revise mode")
        selector = app.chat.focused
        assert not answer.query_one("#answer", Markdown).display   # the source text, to select from
        # Enter without a selection says how to make one.
        await pilot.press("enter")
        assert any("shift+" in n for n in notices(app)) and len(app.store.revisions(message_id)) == 1
        await pilot.press("right", "right", "right", "shift+right", "shift+right", "shift+right", "shift+right")
        assert selector.span == (3, 7)
        # In revise mode `r` writes the span again (outside it, `r` copies the reasoning).
        frames.clear()
        await pilot.press("r")
        await wait_for(pilot, lambda: len(app.store.revisions(message_id)) == 2, "the revision")
        await wait_for_answer(pilot)
        revisions = app.store.revisions(message_id)
        new = revisions[1].content
        assert revisions[1].stats["fill"] == "revise"
        (start, end), = [tuple(span) for span in revisions[1].stats["filled_spans"]]
        assert start == 3 and new[:3] == old[:3] and new[end:] == old[7:]
        assert answer.content == new and "revision 2/2" in str(answer.query_one(".role").render())
        assert answer.filled.display and answer.filled.spans == ((start, end),)
        # The canvas animated the span in place: the text around it given and fixed in every frame drawn.
        assert frames and all(f.fixed is not None and f.fixed.any() and not f.fixed.all() for f in frames)
        # The prompt came from the conversation's cache: far fewer tokens encoded than the prompt holds.
        assert started[1].encoded_tokens < started[1].prompt_tokens
        assert started[1].encoded_tokens < started[0].encoded_tokens
        # Stored, exported, and `[` shows the old one.
        exported = app.store.export_markdown(app.session.conversation_id)
        assert "Revision 2 of 2" in exported and "### Revision 1" in exported
        answer.focus()
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: answer.content == old, "the first revision")
        assert not answer.filled.display and answer.query_one("#answer", Markdown).display


async def test_revise_mode_leaves_with_escape_and_takes_a_mouse_selection(app_env):
    app = make_app("dg_text", max_tokens=40, max_denoising_steps=6, seed=1)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "hello there")
        await wait_for_answer(pilot)
        answer = app.chat.query_one(AssistantMessage)
        # The palette's "Revise a span" acts on the last answer, from the prompt.
        await app.chat.action_revise_answer()
        await wait_for(pilot, lambda: answer.revising is not None, "revise mode")
        selector = answer.revising
        # A drag over the text (Textual's (column, line) offsets) is the span.
        selector.selection_updated(Selection(Offset(2, 0), Offset(6, 0)))
        assert selector.span == (2, 6)
        # A real drag (its text starts after the border and the padding): the characters from the one pressed
        # to the one released, and not copied to the clipboard as other transcript selections are.
        await pilot.pause()
        await pilot.mouse_down(selector, offset=(2 + 1, 0))
        await pilot.hover(selector, offset=(2 + 7, 0))
        await pilot.mouse_up(selector, offset=(2 + 7, 0))
        await wait_for(pilot, lambda: selector.span == (1, 8), "the dragged span")
        assert not any("the selection" in n for n in notices(app))
        await pilot.press("ctrl+right", "shift+end")
        await pilot.press("escape")
        await wait_for(pilot, lambda: answer.revising is None, "revise mode to end")
        assert app.chat.focused is answer and answer.query_one("#answer", Markdown).display
        assert len(app.store.revisions(answer.message_id)) == 1
        # Once another turn follows it, an answer is no longer the one to revise.
        await send(pilot, "and again")
        await wait_for_answer(pilot)
        answer.focus()
        await pilot.press("v")
        await wait_for(pilot, lambda: any("Only the last answer" in n for n in notices(app)), "the refusal")
        assert answer.revising is None and app.chat.focused is answer


async def test_a_hole_longer_than_a_block_fails_the_answer_with_one_line_and_keeps_the_turn(app_env):
    app = make_app("dg_text")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "/fill The ___{300} end.")
        await wait_for(pilot, lambda: app.chat.query(AssistantMessage) and
                       app.chat.query_one(AssistantMessage).status == "error", "the failed answer")
        note = str(app.chat.query_one(AssistantMessage).query_one("#note").render())
        assert "longer than one block" in note and "Traceback" not in note and "\n" not in note
        saved = app.store.get(app.session.conversation_id).messages
        assert saved[0].content == "The ___{300} end." and saved[1].status == "error"


def test_a_selection_offset_maps_back_to_the_source_text():
    text = "ab\ncdef\n\nxyz"
    assert [offset_of(text, line, column) for line, column in [(0, 0), (0, 2), (1, 1), (2, 0), (3, 3), (9, 9)]] == [
        0, 2, 4, 8, 12, 12]


async def test_the_replay_view_steps_plays_jumps_between_blocks_and_changes_speed(app_env):
    async with open_replay("llada21_edits.traj", SIZE) as (pilot, replay):
        frames = replay.trajectory.frames
        firsts = replay.blocks.first_frames
        assert len(firsts) == 3 and replay.index == 0
        await pilot.press("right", "right")
        assert replay.index == 2 and replay.canvas.step is frames[2]
        await pilot.press("left")
        assert replay.index == 1
        await pilot.press("right_square_bracket")
        assert replay.index == firsts[1]
        await pilot.press("pagedown")
        assert replay.index == firsts[2]
        await pilot.press("right", "left_square_bracket")   # inside a block: back to its first step
        assert replay.index == firsts[2]
        await pilot.press("pageup")
        assert replay.index == firsts[1]
        await pilot.press("end")
        assert replay.index == len(frames) - 1
        await pilot.press("home")
        assert replay.index == 0
        # LLaDA-2.1: each block's edits, in the block stats and under the sparklines.
        record = replay.blocks.records[0]
        assert record.edits > 0
        assert f"{record.edits} edits" in str(replay.query_one("#replay-block").render())
        assert replay.query_one("#replay-steps").edits[:1] == [record.edits]
        # Speed and play: it advances on its own, and pauses.
        await pilot.press("plus", "plus")
        assert replay.speed == 32
        await pilot.press("minus")
        assert replay.speed == 16
        await pilot.press("space")
        assert replay.playing
        await wait_for(pilot, lambda: replay.index >= 3, "playing")
        await pilot.press("space")
        assert not replay.playing
        paused_at = replay.index
        await pilot.pause(0.2)
        assert replay.index == paused_at
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(pilot.app.screen, ReplayScreen), "the view to close")


async def test_an_answer_without_a_recording_says_so(app_env):
    (app_env / "config").mkdir()
    (app_env / "config" / "config.toml").write_text("record_trajectories = false\n")
    app = make_app("dg_text", max_tokens=8, max_denoising_steps=2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        assert app.session.record_trajectories is False
        await pilot.press("ctrl+r")
        assert any("no saved answer to replay" in n for n in notices(app))
        await send(pilot, "hi")
        await wait_for_answer(pilot)
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: any("no recorded denoising" in n for n in notices(app)), "the notice")
        assert not isinstance(app.screen, ReplayScreen)


async def test_settings_file_turns_recording_off_and_sets_the_cap(app_env):
    folder = app_env / "config"
    folder.mkdir()
    (folder / "config.toml").write_text("record_trajectories = false\ntrajectory_cap_mb = 1.5\n")
    app = make_app("dg_text")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        assert app.session.record_trajectories is False
        assert app.store.trajectory_cap == int(1.5 * 2**20)
        app.toggle_recording()
        assert app.session.record_trajectories is True
        assert "record_trajectories = true" in (folder / "config.toml").read_text()


async def test_llada21_edits_show_in_the_block_stats_of_a_live_answer(app_env):
    app = make_app("llada2", max_tokens=16, block_length=8, max_denoising_steps=4, editing_threshold=0.001,
                   max_post_steps=3, seed=3)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "hi")
        await wait_for_answer(pilot)
        answer = app.chat.query_one(AssistantMessage)
        saved = app.store.get(app.session.conversation_id).messages[-1]
        edits = saved.stats["edits_per_block"]
        assert sum(edits) > 0 and answer.block_steps.edits == edits
        assert f"block 1: {len(saved.stats['accepted_per_step'][0])} steps" in answer.block_steps.tooltip
        assert count(sum(edits), "edit") in app.chat.status_bar.activity   # "1 edit", not "1 edits"
        # The recording replays them: the frames that edited flash in the canvas.
        trajectory = decode(app.store.load_trajectory(app.store.revisions(saved.id)[0].id))
        assert sum(int(f.edited.sum()) for f in trajectory.frames if f.edited is not None) == sum(edits)


def test_the_help_screen_lists_the_new_keys():
    for key in ("/fill", "ctrl+r", "| v |", "revise mode", "Home / End"):
        assert key in HELP, key
