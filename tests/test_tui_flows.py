"""App flows that need a scripted answer (reasoning, failures) and the model picker."""

from __future__ import annotations

import json

from textual.widgets import Input, OptionList

from engine.thread.worker import EngineWorker
from tui.demo_models import demo_card
from tui.screens.model_picker import DEMO_CHECKPOINT, ModelPickerScreen, cached_checkpoints
from tui.widgets.example_prompts import ExamplePrompt
from tui.widgets.messages import AssistantMessage, UserMessage

from tui_helpers import (  # noqa: F401  (app_env is a fixture)
    CHECKPOINTS,
    ScriptedAnswer,
    app_env,
    make_app,
    notices,
    scripted_block,
    scripted_worker,
    send,
    wait_for,
    wait_for_answer,
    wait_for_model,
    wait_for_screen,
)

SIZE = (110, 40)


async def test_thinking_pane_is_open_while_reasoning_streams_and_collapses_when_the_answer_starts(app_env):
    script = ScriptedAnswer([
        scripted_block(0, reasoning="First, consider the question. "),
        scripted_block(1, reasoning="Then answer briefly."),
        scripted_block(2, content="The **answer**."),
    ])
    app = make_app("dg_text", think=True, make_worker=scripted_worker(script))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "why?")
        answer = app.chat.query_one(AssistantMessage)
        await wait_for(pilot, lambda: answer.canvas.display, "the first canvas frame")
        assert "block 1 of ≤" in answer.canvas.header_text()
        script.advance()
        await wait_for(pilot, lambda: answer.thinking.display, "the thinking pane")
        assert not answer.thinking.collapsed and answer.content == ""
        script.advance()
        await wait_for(pilot, lambda: answer.reasoning.endswith("briefly."), "more reasoning")
        assert not answer.thinking.collapsed
        script.advance()
        await wait_for_answer(pilot)
        assert answer.thinking.collapsed and answer.content == "The **answer**."
        assert answer.query_one("#reasoning").source == "First, consider the question. Then answer briefly."
        stored = app.store.get(app.session.conversation_id).messages[-1]
        assert (stored.reasoning, stored.content) == (answer.reasoning, answer.content)
        # Only the answer goes back to the model on the next turn.
        assert app.session.history[-1] == {"role": "assistant", "content": "The **answer**."}


async def test_a_failed_answer_is_shown_in_the_transcript_and_the_app_keeps_going(app_env):
    script = ScriptedAnswer([scripted_block(0, content="fine")], fail_first=RuntimeError("something broke\ndetails"))
    app = make_app("dg_text", make_worker=scripted_worker(script))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "first")
        await wait_for_answer(pilot)
        failed = app.chat.query_one(AssistantMessage)
        assert failed.status == "error" and failed.has_class("-error")
        assert str(failed.query_one("#note").render()) == "⚠ RuntimeError: something broke"
        await send(pilot, "second")
        script.advance()
        await wait_for_answer(pilot)
        assert list(app.chat.query(AssistantMessage))[-1].content == "fine"
        # The failed answer is saved as such but never sent back to the model.
        assert [m["content"] for m in script.calls[1]] == ["first", "second"]
        statuses = [m.status for m in app.store.get(app.session.conversation_id).messages]
        assert statuses == ["complete", "error", "complete", "complete"]


async def test_no_model_opens_the_picker_with_the_demo_and_cached_checkpoints(app_env):
    # A fake Hugging Face cache with one supported and one unsupported model.
    for repo, model_type in (("org--tiny-gemma", "diffusion_gemma"), ("org--llama", "llama")):
        snapshot = app_env / "hf-cache" / f"models--{repo}" / "snapshots" / "abc"
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text(json.dumps({"model_type": model_type}))
    assert [c.ref for c in cached_checkpoints()] == ["org/tiny-gemma"]
    app = make_app(None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, ModelPickerScreen)
        await wait_for(pilot, lambda: any(c.ref == "org/tiny-gemma" for c in picker.choices), "the cache scan")
        options = picker.query_one(OptionList)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        # The two trained demos first, then the cache, the server entry, and real checkpoints to download.
        assert prompts[0].startswith("DiffusionGemma demo (bundled, works offline)") and "trained tiny" in prompts[0]
        assert prompts[1].startswith("LLaDA-2 demo (bundled, works offline)")
        assert "org/tiny-gemma" in prompts[2]
        assert "Connect to a server…" in prompts[3]
        assert "mlx-community/diffusiongemma-26B-A4B-it-4bit" in prompts[4] and "download 16.5 GB" in prompts[4]
        assert any(p.startswith("inclusionAI/LLaDA2.1-mini") for p in prompts[4:])
        # A folder that does not exist: one line, the picker stays.
        picker.query_one("#model-ref", Input).value = str(app_env / "nowhere")
        status = picker.query_one("#load-status")
        await pilot.click("#load")
        # Wait for the new state (the reason), never for the old one to go away: the click's handler may not
        # even have run yet.
        await wait_for(pilot, lambda: "model folder not found" in str(status.render()), "the load to fail")
        assert not picker.busy
        # A Hub id that is not cached while offline, sent with Enter (a second click within Textual's 0.2 s
        # press effect would be ignored by the button, as it is for a person).
        ref = picker.query_one("#model-ref", Input)
        ref.value = "someone/not-cached"
        ref.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: "HF_HUB_OFFLINE" in str(status.render()), "the load to fail")
        assert not picker.busy
        # The bundled demo works offline.
        options.focus()
        options.highlighted = 0
        await pilot.press("enter")
        await wait_for_model(pilot)
        await pilot.pause()
        assert not isinstance(app.screen, ModelPickerScreen)
        assert app.model_ref == str(DEMO_CHECKPOINT) and app.model_info.name == DEMO_CHECKPOINT.name
        assert app.config.model == str(DEMO_CHECKPOINT)
        await send(pilot, "hi")
        await wait_for_answer(pilot)
        assert app.chat.query_one(AssistantMessage).status == "complete"


async def test_a_model_that_fails_to_load_at_start_opens_the_picker_with_the_reason(app_env):
    app = make_app(None)
    app.options.model = str(app_env / "missing-model")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, ModelPickerScreen, "the picker")
        status = app.screen.query_one("#load-status")
        await wait_for(pilot, lambda: "model folder not found" in str(status.render()), "the reason")
        await pilot.press("escape")
        await pilot.pause()
        app.chat.prompt.value = "hello?"
        app.chat.prompt.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert any("No model is loaded" in n for n in notices(app))


async def test_a_demo_shows_its_example_prompts_and_a_click_sends_one(app_env):
    card = demo_card(DEMO_CHECKPOINT)
    assert card is not None and len(card.examples) >= 1
    app = make_app(None)
    app.options.model = str(DEMO_CHECKPOINT)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        await wait_for(pilot, lambda: len(list(app.chat.query(ExamplePrompt))) == len(card.examples),
                       "the example prompts")
        shown = list(app.chat.query(ExamplePrompt))
        assert [e.text for e in shown] == list(card.examples)
        await pilot.click(shown[-1])
        # Sent, it starts the conversation: the welcome and the examples give way to the turns.
        await wait_for(pilot, lambda: app.chat.query(AssistantMessage), "the answer to start")
        await wait_for_answer(pilot)
        assert [u.content for u in app.chat.query(UserMessage)] == [card.examples[-1]]
        assert app.chat.prompt.value == ""
        assert not list(app.chat.query(ExamplePrompt)) and not app.chat.query("#welcome")
        # A new conversation shows them again; they belong to the demo: a checkpoint without a card shows none.
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: len(list(app.chat.query(ExamplePrompt))) == len(card.examples), "the examples")
        # Tab reaches the first example; typing there goes on to the message box, not into the void.
        await pilot.press("tab")
        assert isinstance(app.chat.focused, ExamplePrompt)
        await pilot.press("h", "i")
        assert app.chat.focused is app.chat.prompt and app.chat.prompt.text == "hi"
        app.load_model(str(CHECKPOINTS / "dg_text"))
        await wait_for(pilot, lambda: app.model_info is not None and app.model_info.name == "dg_text", "the fixture")
        await wait_for(pilot, lambda: not list(app.chat.query(ExamplePrompt)), "the examples to go")
        assert app.chat.query("#welcome")


async def test_a_download_shows_progress_and_esc_cancels_it(app_env):
    import engine
    from engine.errors import CheckpointError

    chunks = []

    def load(ref, progress=None, cancel=None):
        if ref != "org/big-model":
            return engine.load(ref, progress=progress, cancel=cancel)
        total = 50 * 2**20
        while not cancel.is_set():
            chunks.append(len(chunks))
            progress(min(len(chunks) * 2**20, total), total, "model.safetensors")
            cancel.wait(0.01)
        raise CheckpointError("download of org/big-model cancelled")

    app = make_app(None, make_worker=lambda notify: EngineWorker(notify, load=load))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, ModelPickerScreen, "the picker")
        picker = app.screen
        picker.query_one("#model-ref", Input).value = "org/big-model"
        await pilot.click("#load")
        status = picker.query_one("#load-status")
        await wait_for(pilot, lambda: "Downloading model.safetensors" in str(status.render()), "download progress")
        bar = picker.query_one("#load-progress")
        assert bar.display and bar.total == 50 * 2**20 and 0 < bar.progress <= bar.total
        assert "of 50.0 MiB (Esc cancels)" in str(status.render())
        await pilot.press("escape")
        await wait_for(pilot, lambda: str(status.render()) == "Loading cancelled.", "the cancel")
        assert not picker.busy and not bar.display
        assert isinstance(app.screen, ModelPickerScreen) and app.model_info is None
        # The picker still works afterwards.
        options = picker.query_one(OptionList)
        options.focus()
        options.highlighted = 0
        await pilot.press("enter")
        await wait_for_model(pilot)


async def test_command_palette_offers_the_app_commands_and_they_work(app_env, tmp_path):
    from PIL import Image

    from tui.widgets.attachments import AttachmentChip

    picture = tmp_path / "dog.png"
    Image.new("RGB", (30, 20), "white").save(picture)
    app = make_app("llada2", max_tokens=16, max_denoising_steps=2)
    app.options.images = [str(picture)]  # as `--image`: attached to the first message
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        await pilot.pause()
        assert [chip.attachment.name for chip in app.chat.query(AttachmentChip)] == ["dog.png"]
        assert any("llada2 is text-only" in n for n in notices(app))
        commands = {command.title: command for command in app.get_system_commands(app.screen)}
        expected = {"New conversation", "Conversations", "Search conversations", "Rename conversation",
                    "Delete conversation", "Export conversation", "Choose model", "Sampler panel", "Thinking on/off",
                    "Attach image", "Copy last answer", "Canvas: show candidates", "Canvas: show noise", "Help",
                    "Theme: diffusion-dark", "Theme: diffusion-light", "Theme: diffusion-high-contrast"}
        assert expected <= set(commands)
        commands["Theme: diffusion-high-contrast"].callback()
        commands["Canvas: show noise"].callback()
        await pilot.pause()
        assert app.theme == "diffusion-high-contrast" and app.config.canvas_mode == "noise"
        commands["Sampler panel"].callback()
        panel = app.chat.query_one("SamplerPanel")
        assert panel.has_class("-open") and panel.query_one("#canvas-mode").value == "noise"
        # ... and the panel's own selector goes the other way.
        panel.query_one("#canvas-mode").value = "candidates"
        await pilot.pause()
        assert app.config.canvas_mode == "candidates"
        # The palette itself lists them.
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"canvas")
        await pilot.pause(0.3)
        from textual.command import CommandList

        shown = app.screen.query_one(CommandList)
        titles = [str(shown.get_option_at_index(i).prompt) for i in range(shown.option_count)]
        assert any("Canvas: show noise" in title for title in titles)


async def test_the_picker_scans_the_cache_once(app_env, monkeypatch):
    """The scan ran again after every result (each result scrolled the status into view, which scanned again):
    a loop of cache scans for as long as the picker was open, and a NoMatches once it was dismissed."""
    import tui.screens.model_picker as picker_module

    scans = []
    real = picker_module.cached_checkpoints
    monkeypatch.setattr(picker_module, "cached_checkpoints", lambda: scans.append(1) or real())
    app = make_app(None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ModelPickerScreen) and scans, "the scan")
        await pilot.pause(0.5)
        assert len(scans) == 1
