"""The chat app driven with Textual's Pilot on the real engine and the tiny fixture checkpoints."""

from __future__ import annotations

import sys

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

from textual.widgets import Input, OptionList

from engine.events import Finished
from tui.screens.conversations import ConversationsScreen
from tui.screens.dialogs import TextPromptScreen
from tui.screens.help import HelpScreen
from tui.widgets.canvas import DenoisingCanvas
from tui.widgets.messages import AssistantMessage, UserMessage
from tui.widgets.printable import flowing
from tui.widgets.sampler_panel import SamplerPanel

from tui_helpers import (  # noqa: F401  (app_env is a fixture)
    app_env,
    engine_events,
    paced_worker,
    make_app,
    notices,
    send,
    wait_for,
    wait_for_answer,
    wait_for_model,
    wait_for_screen,
)

SIZE = (110, 40)


@pytest.fixture
def canvas_frames(monkeypatch):
    """Every frame the canvas shows: (block, step, max_steps, answer text at that moment, noise_is_mask)."""
    frames = []
    original = DenoisingCanvas.show

    def show(self, step, *args):
        answer = next(a for a in self.ancestors if isinstance(a, AssistantMessage))
        frames.append((step.block, step.step, step.max_steps, answer.content, step.noise_is_mask))
        return original(self, step, *args)

    monkeypatch.setattr(DenoisingCanvas, "show", show)
    return frames


@pytest.fixture
def committed_blocks(monkeypatch):
    """The content of every committed block, in the order the transcript received them."""
    blocks = []
    original = AssistantMessage.add_block

    async def add_block(self, content_delta, reasoning_delta):
        blocks.append(content_delta)
        await original(self, content_delta, reasoning_delta)

    monkeypatch.setattr(AssistantMessage, "add_block", add_block)
    return blocks


async def test_a_prompt_shows_canvas_frames_and_only_committed_text(app_env, canvas_frames, committed_blocks):
    app = make_app("dg_text", max_tokens=64, max_denoising_steps=12, seed=3)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        assert "dg_text │ DiffusionGemma │ thinking off │ ready" in app.chat.status_bar.text
        await send(pilot, "hello there")
        await wait_for_answer(pilot)
        answer = app.chat.query_one(AssistantMessage)
        assert [u.content for u in app.chat.query(UserMessage)] == ["hello there"]
        # Frames of both blocks were drawn, block by block, step by step.
        assert {block for block, *_ in canvas_frames} == {0, 1}
        assert all(max_steps == 12 for _, _, max_steps, _, _ in canvas_frames)
        assert [b for b, *_ in canvas_frames] == sorted(b for b, *_ in canvas_frames)
        # While block k denoised, the transcript held exactly the blocks committed before it.
        for block, _, _, shown, _ in canvas_frames:
            assert shown == "".join(committed_blocks[:block])
        assert answer.content == "".join(committed_blocks) and answer.content
        # Shown as Markdown, with the random model's control characters made visible (never sent raw).
        shown = answer.query_one("#answer").source
        assert shown == flowing(answer.content) and not any(ord(c) < 32 and c not in "\n\t" for c in shown)
        assert not answer.canvas.display and answer.canvas.step is None  # hidden once the answer is complete
        assert answer.status == "complete"
        assert not answer.thinking.display  # no reasoning: no thinking pane
        status = app.chat.status_bar.text
        assert "tok/s" in status and "24 steps, 2 blocks" in status and "length" in status
        assert app.session.last_answer == answer.content
        app.chat.action_copy_answer()
        assert app.clipboard == answer.content


async def test_escape_cancels_mid_block_and_keeps_committed_blocks(app_env, canvas_frames, committed_blocks,
                                                                   monkeypatch):
    # Paced (10 ms a step): unpaced, the tiny model could finish before Esc reaches the worker on a busy machine.
    app = make_app("dg_text", max_tokens=256, max_denoising_steps=48, seed=3,
                   make_worker=lambda notify: paced_worker(notify, 0.01))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        finished = engine_events(app, monkeypatch, Finished)
        await send(pilot, "hello there")
        # Let the first block commit and a later one start denoising.
        await wait_for(pilot, lambda: any(block >= 1 for block, *_ in canvas_frames), "block 2 to be denoising")
        worker = app.engine_worker
        cancel = worker.cancel
        at_cancel = []
        # The engine's newest step when Esc reaches the worker (the screen may be a frame behind).
        monkeypatch.setattr(worker, "cancel", lambda job: at_cancel.append(worker.latest_frame.step) or cancel(job))
        await pilot.press("escape")
        await wait_for_answer(pilot)
        answer = app.chat.query_one(AssistantMessage)
        assert finished[-1].finish_reason == "cancelled"
        # Within one denoising step: the step running when Esc came in finishes (the slot may hold the step
        # before it), then no further one runs, in this block or (if that step ended it) the next.
        steps = finished[-1].stats.steps_per_block
        assert at_cancel[0].block >= 1 and len(steps) >= at_cancel[0].block + 1
        assert sum(steps[at_cancel[0].block:]) - (at_cancel[0].step + 1) <= 2
        assert answer.status == "cancelled" and answer.has_class("-cancelled")
        assert "cancelled" in str(answer.query_one("#note").render())
        # The blocks committed before Esc stay; nothing of the cancelled (last) one lands. Text held back at the
        # end of the last committed block (e.g. half a UTF-8 character) arrives once, as the Finished tail.
        cancelled_block = len(steps) - 1
        tail = int(bool(finished[-1].content_tail or finished[-1].reasoning_tail))
        assert len(committed_blocks) == cancelled_block + 1 + tail and committed_blocks[cancelled_block] == ""
        assert answer.content == "".join(committed_blocks) == finished[-1].content != ""
        stored = app.store.get(app.session.conversation_id).messages
        assert [(m.role, m.status) for m in stored] == [("user", "complete"), ("assistant", "cancelled")]
        assert stored[1].content == answer.content
        # The app keeps working after a cancel.
        await send(pilot, "again")
        await pilot.press("escape")
        await wait_for_answer(pilot)
        assert len(app.chat.query(AssistantMessage)) == 2


async def test_sampler_panel_validates_applies_from_next_turn_saves_and_resets(app_env, canvas_frames,
                                                                                monkeypatch):
    app = make_app("dg_text", max_tokens=32, max_denoising_steps=None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        finished = engine_events(app, monkeypatch, Finished)
        requests = []
        generate = app.engine_worker.generate
        monkeypatch.setattr(app.engine_worker, "generate",
                            lambda request: requests.append(request) or generate(request))
        await pilot.press("ctrl+b")
        panel = app.chat.query_one(SamplerPanel)
        assert panel.has_class("-open")
        steps = panel.query_one("#setting-max_denoising_steps", Input)
        error = panel.query_one("#error-max_denoising_steps")
        # An invalid value shows the engine's one-line reason and is not used.
        steps.focus()
        await pilot.press("0")
        await pilot.pause()
        # Named by its panel label: only the command line speaks in flags.
        assert str(error.render()) == "Steps (max per block) must be a positive integer, got 0"
        assert steps.has_class("-invalid")
        assert app.settings_for("diffusion_gemma").max_denoising_steps is None
        await pilot.press("backspace", "x")
        await pilot.pause()
        assert str(error.render()) == "Steps (max per block) must be an integer, got 'x'"
        await pilot.press("backspace", "3")
        await pilot.pause()
        assert str(error.render()) == "" and not steps.has_class("-invalid")
        assert app.settings_for("diffusion_gemma").max_denoising_steps == 3
        saved = tomllib.loads((app_env / "config" / "config.toml").read_text())
        assert saved["samplers"]["diffusion_gemma"]["max_denoising_steps"] == 3
        # The next turn runs with it.
        await send(pilot, "hi")
        await wait_for_answer(pilot)
        assert requests[-1].settings.max_denoising_steps == 3
        assert max(finished[-1].stats.steps_per_block) <= 3
        assert all(max_steps == 3 for _, _, max_steps, _, _ in canvas_frames)
        # Reset puts the checkpoint's defaults back, in the panel, the app and the file.
        reset = panel.query_one("#sampler-reset")
        reset.scroll_visible(animate=False)
        await pilot.pause()
        await pilot.click(reset)
        await pilot.pause()
        assert app.settings_for("diffusion_gemma").max_denoising_steps is None
        assert panel.query_one("#setting-max_denoising_steps", Input).value == ""
        saved = tomllib.loads((app_env / "config" / "config.toml").read_text())
        assert "diffusion_gemma" not in saved.get("samplers", {})


async def test_llada2_shows_its_own_settings_and_a_masked_canvas(app_env, canvas_frames):
    app = make_app("llada2", max_tokens=40, max_denoising_steps=16)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        await pilot.press("ctrl+b")
        panel = app.chat.query_one(SamplerPanel)
        shown = {editor.id for editor in panel.query("Input, Select, Switch")}
        assert {"setting-block_length", "setting-diffusion_threshold_end", "setting-top_k", "setting-top_p"} <= shown
        assert "setting-diffusion_sampler" not in shown
        await send(pilot, "hello")
        await wait_for_answer(pilot)
        assert canvas_frames and all(noise_is_mask for *_, noise_is_mask in canvas_frames)
        assert "LLaDA-2 MoE" in app.chat.status_bar.text


async def test_thinking_toggle_is_per_conversation_and_reaches_the_engine(app_env, monkeypatch):
    app = make_app("dg_text", max_tokens=8, max_denoising_steps=2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        requests = []
        original = app.engine_worker.generate
        monkeypatch.setattr(app.engine_worker, "generate",
                            lambda request: requests.append(request) or original(request))
        await send(pilot, "first")
        await wait_for_answer(pilot)
        await pilot.press("ctrl+t")
        assert "thinking on" in app.chat.status_bar.text
        await send(pilot, "second")
        await wait_for_answer(pilot)
        assert [r.think for r in requests] == [False, True]
        conversation = app.session.conversation_id
        assert app.store.get(conversation).think is True
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.session.think is False and "thinking off" in app.chat.status_bar.text
        await app.session.open(conversation)
        assert app.session.think is True


async def test_conversations_survive_a_restart_and_can_be_searched_renamed_exported_and_deleted(app_env):
    app = make_app("dg_text", max_tokens=8, max_denoising_steps=2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "remember the zebra")
        await wait_for_answer(pilot)
        first_answer = app.session.last_answer
        await pilot.press("ctrl+n")
        await send(pilot, "another topic")
        await wait_for_answer(pilot)

    app = make_app("dg_text")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        assert not app.chat.query(UserMessage)  # a restart opens a new conversation
        await pilot.press("ctrl+o")
        screen = await wait_for_screen(pilot, ConversationsScreen, "the conversation list")
        options = screen.query_one(OptionList)
        assert options.option_count == 3   # "New conversation" and the two
        screen.query_one("#conversation-search", Input).value = "zebra"
        await pilot.pause()
        assert options.option_count == 1 and "remember the zebra" in str(options.get_option_at_index(0).prompt)
        screen.query_one("#conversation-search", Input).value = '"zeb*'  # odd input is just text
        await pilot.pause()
        screen.query_one("#conversation-search", Input).value = "zebra"
        await pilot.pause()
        options.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert [m.content for m in app.chat.query(UserMessage)] == ["remember the zebra"]
        assert app.chat.query_one(AssistantMessage).content == first_answer
        assert app.session.history[0] == {"role": "user", "content": "remember the zebra"}
        assert app.chat.prompt.prompts == ["remember the zebra"]
        # Rename and export the open conversation from the command palette actions.
        app.action_rename_conversation()
        await wait_for_screen(pilot, TextPromptScreen, "the rename dialog")
        app.screen.query_one("#dialog-input", Input).value = "Zebras"
        await pilot.press("enter")
        await pilot.pause()
        assert app.chat.title == "Zebras"
        app.action_export_conversation()
        await pilot.pause()
        await pilot.press("enter")  # the proposed file in the current folder
        await pilot.pause()
        exported = app_env / f"zebras-{app.session.conversation_id}.md"
        assert exported.read_text().startswith("# Zebras") and "remember the zebra" in exported.read_text()
        # Delete it from the list; the chat goes back to a new conversation.
        await pilot.press("ctrl+o")
        await wait_for_screen(pilot, ConversationsScreen, "the conversation list")
        app.screen.query_one("#conversation-search", Input).value = "zebra"
        await pilot.pause()
        app.screen.query_one(OptionList).focus()
        await pilot.press("ctrl+d")
        await pilot.pause()
        await pilot.click("#confirm")
        await pilot.pause()
        assert [c.title for c in app.store.list()] == ["another topic"]
        await pilot.press("escape")
        await pilot.pause()
        assert app.session.conversation_id is None and not app.chat.query(UserMessage)
        # The palette's delete acts on the open conversation.
        await app.session.open(app.store.list()[0].id)
        app.action_delete_conversation()
        await pilot.pause()
        await pilot.click("#confirm")
        await pilot.pause()
        assert app.store.list() == [] and app.session.conversation_id is None


async def test_prompt_history_help_and_an_invalid_settings_file(app_env):
    config = app_env / "config" / "config.toml"
    config.parent.mkdir()
    broken = 'theme = "diffusion-dark"\nthink = "yes"\n'
    config.write_text(broken)
    app = make_app("dg_text", max_tokens=8, max_denoising_steps=2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        assert any(str(config) in n and "think must be true or false" in n for n in notices(app))
        for text in ("one", "two"):
            await send(pilot, text)
            await wait_for_answer(pilot)
        prompt = app.chat.prompt
        prompt.value = "draft"
        await pilot.press("up")
        assert prompt.value == "two"
        await pilot.press("up", "up")
        assert prompt.value == "one"
        await pilot.press("down", "down")
        assert prompt.value == "draft"
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        # Changing a setting does not overwrite the broken file.
        app.remember_settings("diffusion_gemma", app.settings_for("diffusion_gemma").replace(top_k=5))
        app.theme = "diffusion-light"
    assert config.read_text() == broken


async def test_theme_choice_is_saved(app_env):
    app = make_app("dg_text")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        assert app.theme == "diffusion-dark"
        app.theme = "diffusion-high-contrast"
        chosen = app.theme
        await pilot.pause()
    saved = tomllib.loads((app_env / "config" / "config.toml").read_text())
    assert saved["theme"] == chosen
    app = make_app("dg_text")
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme == chosen


async def test_loading_a_model_does_not_report_the_canvas_mode_as_changed(app_env, monkeypatch):
    # A Select posts Changed when mounted, so each rebuild of the sampler panel used to send the app a
    # CanvasModeChanged for the mode it already had; handled while the app closed, it looked for a panel that was
    # gone (a CI failure). Only a choice of a different mode is a change.
    from tui.app import DiffusionChatApp
    from tui.widgets.sampler_panel import SamplerPanel

    reported = []
    original = DiffusionChatApp.set_canvas_mode
    monkeypatch.setattr(DiffusionChatApp, "set_canvas_mode", lambda self, mode: reported.append(mode) or original(self, mode))
    app = make_app("dg_text")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        panel = app.chat.query_one(SamplerPanel)
        await panel.show_settings(panel.family, panel.settings, panel.canvas_mode, panel.defaults, panel.offered)
        await pilot.pause()
        await pilot.pause()
        assert reported == []
        panel.query_one("#canvas-mode").value = "noise"
        await pilot.pause()
        assert reported == ["noise"]


async def test_a_canvas_mode_change_arriving_after_the_chat_screen_is_gone_is_only_saved(app_env):
    # The sampler panel's CanvasModeChanged can be handled after the app began closing (seen in CI: the message
    # queued by a model load, the app exiting right after): it used to raise StopIteration looking for the chat.
    from tui.screens.chat import ChatScreen

    app = make_app("dg_text")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        while any(isinstance(screen, ChatScreen) for screen in app.screen_stack):
            await app.pop_screen()
        app.set_canvas_mode("noise")
        assert app.config.canvas_mode == "noise"
