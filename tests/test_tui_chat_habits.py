"""The chat habits, driven with Pilot: regenerate → revision switch → compare, edit → branch, copying code
blocks exactly, the system prompt reaching the chat template, the multi-line prompt and image thumbnails."""

from __future__ import annotations

import pytest
from textual import events
from textual.widgets import DataTable, Static
from textual.widgets.markdown import MarkdownFence
from textual_image.widget import HalfcellImage

import engine
from engine.events import Started
from engine.thread.worker import EngineWorker
from tui.screens.compare import CompareScreen
from tui.widgets.attachments import AttachmentChip
from tui.widgets.messages import AssistantMessage, UserMessage
from tui.widgets.thumbnail import Thumbnail

from tui_helpers import (  # noqa: F401  (app_env is a fixture)
    engine_events,
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


def role_of(turn) -> str:
    return str(turn.query_one(".role", Static).render())


async def test_regenerate_switch_revisions_and_compare_them(app_env, monkeypatch):
    app = make_app("dg_text", max_tokens=40, max_denoising_steps=6, seed=1)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        started = engine_events(app, monkeypatch, Started)
        await send(pilot, "hello there")
        await wait_for_answer(pilot)
        answer = app.chat.query_one(AssistantMessage)
        first = answer.content
        # The blocks' sparklines: one per committed block, the engine's own per-step counts.
        stored = app.store.get(app.session.conversation_id).messages[-1]
        assert answer.block_steps.blocks == [tuple(b) for b in stored.stats["accepted_per_step"]]
        # Tune the sampler, regenerate: a new revision of the same message, in place.
        app.remember_settings("diffusion_gemma", app.settings_for("diffusion_gemma").replace(max_denoising_steps=3,
                                                                                              seed=9))
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: len(app.store.revisions(stored.id)) == 2, "the new revision")
        await wait_for_answer(pilot)
        assert len(app.chat.query(AssistantMessage)) == 1 and "revision 2/2" in role_of(answer)
        second = answer.content
        revisions = app.store.revisions(stored.id)
        assert [r.settings["max_denoising_steps"] for r in revisions] == [6, 3]
        assert max(revisions[1].stats["steps_per_block"]) <= 3 and revisions[1].content == second
        # The same prompt: the conversation's cache serves it (only the last token is run again).
        assert started[1].prompt_tokens == started[0].prompt_tokens and started[1].encoded_tokens < 4
        # [ and ] on the focused answer switch revisions; the transcript and what is sent next follow.
        await pilot.press("ctrl+up")
        assert app.chat.focused is answer
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: answer.content == first, "revision 1")
        assert "revision 1/2" in role_of(answer) and app.session.history[-1]["content"] == first
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: answer.content == second, "revision 2")
        # The compare view: the setting that differs, and what each run cost.
        await pilot.press("ctrl+k")
        await wait_for_screen(pilot, CompareScreen, "the compare view")
        table = app.screen.query_one(DataTable)
        rows = {str(table.get_row_at(i)[0]): [str(c) for c in table.get_row_at(i)[1:]] for i in range(table.row_count)}
        assert rows["max_denoising_steps"] == ["6", "3"] and rows["seed"] == ["1", "9"]
        assert rows["steps"][1].startswith(str(sum(revisions[1].stats["steps_per_block"])))
        assert table.cursor_column == 2  # on the revision shown
        exported = app.store.export_markdown(app.session.conversation_id)
        assert "Revision 2 of 2" in exported and "max_denoising_steps=6" in exported
        await pilot.press("left", "enter")  # show revision 1 from there
        await wait_for(pilot, lambda: answer.content == first, "revision 1 from the compare view")
        assert not isinstance(app.screen, CompareScreen)
        assert app.store.get_message(stored.id).revision == 1


async def test_edit_and_resend_makes_a_branch_from_the_edit_and_reuses_the_prefix(app_env, monkeypatch):
    app = make_app("dg_text", max_tokens=16, max_denoising_steps=3)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        started = engine_events(app, monkeypatch, Started)
        for text in ("first question", "second question"):
            await send(pilot, text)
            await wait_for_answer(pilot)
        await pilot.press("ctrl+up", "ctrl+up")  # the last answer, then the message before it
        edited = app.chat.focused
        assert isinstance(edited, UserMessage) and edited.content == "second question"
        await pilot.press("e")
        assert app.chat.prompt.has_focus and app.chat.prompt.value == "second question"
        assert app.chat.query_one("#edit-banner").display
        app.chat.prompt.value = "second question, rephrased"
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(started) == 3, "the resent message's answer")
        await wait_for_answer(pilot)
        users = list(app.chat.query(UserMessage))
        assert [u.content for u in users] == ["first question", "second question, rephrased"]
        assert "branch 2/2" in role_of(users[1]) and not app.chat.query_one("#edit-banner").display
        # The prompt up to the edit came from the conversation's cache.
        assert started[2].encoded_tokens < started[2].prompt_tokens - 10
        # The old branch is kept, with its answer: [ on the message shows it again.
        users[1].focus()
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: [u.content for u in app.chat.query(UserMessage)][-1] == "second question",
                       "the old branch")
        assert len(app.chat.query(AssistantMessage)) == 2
        assert "branch 1/2" in role_of(app.chat.focused)
        # Esc while editing stops editing and leaves the prompt empty.
        await pilot.press("e")
        await pilot.press("escape")
        assert app.chat.editing is None and app.chat.prompt.value == ""


CODE_ANSWER = (
    "Two ways:\n\n```python\ndef add(a, b):\n    return a + b  # ``` inside\n```\n\n"
    "and\n\n~~~sh\necho 'a\tb'\n~~~\n"
)


async def test_code_blocks_copy_exactly_by_key_and_click_and_reasoning_and_selection_copy(app_env):
    script = ScriptedAnswer([scripted_block(0, reasoning="Think first."), scripted_block(1, content=CODE_ANSWER)])
    app = make_app("dg_text", think=True, make_worker=scripted_worker(script))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "add two numbers")
        chat = app.chat
        # While a block denoises, the status bar draws its accepted-per-step curve; it goes with the answer.
        await wait_for(pilot, lambda: chat.status_bar.live_steps, "the live block's curve")
        script.advance()
        script.advance()
        await wait_for_answer(pilot)
        assert chat.status_bar.live_steps == ()
        await pilot.press("ctrl+shift+c")
        assert app.clipboard == "def add(a, b):\n    return a + b  # ``` inside"
        await pilot.press("ctrl+shift+c")
        assert app.clipboard == "echo 'a\tb'"
        assert any("code block 2/2 (sh, 1 line)" in n for n in notices(app))
        answer = chat.query_one(AssistantMessage)
        fences = list(answer.query_one("#answer").query(MarkdownFence))
        assert fences[1].has_class("-copied") and not fences[0].has_class("-copied")
        await pilot.click(fences[0])
        assert app.clipboard == "def add(a, b):\n    return a + b  # ``` inside"
        chat.action_copy_reasoning()
        await pilot.pause()
        assert app.clipboard == "Think first."
        await pilot.press("ctrl+y")
        assert app.clipboard == CODE_ANSWER
        # A mouse selection in the transcript is copied when it is made.
        user_text = chat.query_one(UserMessage).query_one(".user-text")
        await pilot.mouse_down(user_text, offset=(1, 0))
        await pilot.hover(user_text, offset=(8, 0))
        await pilot.mouse_up(user_text, offset=(8, 0))
        await wait_for(pilot, lambda: app.clipboard == "add two ", "the selection to be copied")


async def test_the_system_prompt_is_shown_saved_and_reaches_the_chat_template(app_env):
    prompts = []

    def recording(model, messages, **options):
        prompt = model.tokenizer.prepare_chat(messages, think=options["think"])
        prompts.append(model.tokenizer.decode(prompt.ids, keep_hidden=True))
        return engine.generate(model, messages=messages, **options)

    app = make_app("dg_text", max_tokens=8, max_denoising_steps=2,
                   make_worker=lambda notify: EngineWorker(notify, generate=recording))
    app.options.system_prompt = "Be brief."  # as --system
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        shown = app.chat.query_one("#system-prompt")
        assert "Be brief." in str(shown.query_one(".system-text").render())
        await send(pilot, "hi")
        await wait_for_answer(pilot)
        assert "<|turn>system\nBe brief." in prompts[0]
        assert app.store.get(app.session.conversation_id).system_prompt == "Be brief."
        # /system TEXT changes it (several lines welcome) from the next answer on.
        app.chat.prompt.value = "/system Answer in French.\nAlways."
        await pilot.press("enter")
        await wait_for(pilot, lambda: "French" in str(shown.query_one(".system-text").render()), "the new prompt")
        assert app.chat.prompt.value == ""
        await send(pilot, "again")
        await wait_for_answer(pilot)
        assert "<|turn>system\nAnswer in French.\nAlways." in prompts[1] and "Be brief." not in prompts[1]
        # Reopened, the conversation shows it above its first turn.
        conversation = app.session.conversation_id
        await pilot.press("ctrl+n")
        await app.session.open(conversation)
        await pilot.pause()
        first = app.chat.transcript.children[0]
        assert first.id == "system-prompt" and "French" in first.text


async def test_the_prompt_takes_several_lines_a_long_paste_and_completes_image_paths(app_env, tmp_path):
    folder = tmp_path / "pictures"
    (folder / "album").mkdir(parents=True)
    for name in ("a-notes.txt", "a-photo.png"):
        (folder / name).write_bytes(b"x")
    app = make_app("dg_vision", max_tokens=8, max_denoising_steps=2)  # (a text-only model completes no /image path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        prompt = app.chat.prompt
        prompt.focus()
        await pilot.press(*"line one", "ctrl+j", *"line two", "shift+enter", *"three")
        assert prompt.value == "line one\nline two\nthree"
        await pilot.press("up")  # within the message: the cursor moves, no history walk
        assert prompt.value == "line one\nline two\nthree" and prompt.cursor_location[0] == 1
        await pilot.press("enter")
        await wait_for_answer(pilot)
        assert app.chat.query_one(UserMessage).content == "line one\nline two\nthree"
        # 200 kB pasted at once: all of it lands, the box stays small and keys keep working.
        pasted = ("word " * 40 + "\n") * 1000
        app.post_message(events.Paste(pasted))  # as the terminal driver delivers a paste
        await wait_for(pilot, lambda: len(prompt.value) == len(pasted), "the paste")
        assert prompt.value == pasted and prompt.size.height <= 12
        await pilot.press("x")
        assert prompt.value.endswith("x")
        # /image completion: image files first, then folders, then the rest; it completes among images.
        prompt.value = f"/image {folder}/a"
        await pilot.pause()
        listed = str(app.chat.query_one("#completions").render())
        assert listed.index("a-photo.png") < listed.index("album/") < listed.index("a-notes.txt")
        assert prompt.suggestion == ""  # a-photo.png and album/ share only "a"
        await pilot.press("-")
        await pilot.pause()
        assert prompt.suggestion == "photo.png"
        await pilot.press("tab")
        assert prompt.value == f"/image {folder}/a-photo.png"


async def test_an_attached_image_shows_a_thumbnail_in_its_chip(app_env, tmp_path):
    from PIL import Image

    picture = tmp_path / "cat.png"
    Image.new("RGB", (64, 48), "orange").save(picture)
    app = make_app("dg_vision", max_tokens=8, max_denoising_steps=2)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        assert app.chat.attach(str(picture))
        chip = app.chat.query_one(AttachmentChip)
        await wait_for(pilot, lambda: chip.query(Thumbnail) and chip.thumbnail.loaded, "the thumbnail to be decoded")
        # Decoded off the UI thread, drawn with half-blocks in a headless run (no terminal to ask).
        image = chip.thumbnail.query_one(HalfcellImage)
        assert image.image.size[0] <= 192 and image.image.getpixel((0, 0)) == (255, 165, 0)


async def test_a_thumbnail_of_an_unreadable_file_says_so_and_breaks_nothing(app_env, tmp_path):
    app = make_app(None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("escape")
        thumbnail = Thumbnail(str(tmp_path / "gone.png"))
        await app.chat.mount(thumbnail)
        await wait_for(pilot, lambda: thumbnail.failed is not None, "the decode to fail")
        assert not thumbnail.loaded and "gone.png" in thumbnail.tooltip


@pytest.mark.parametrize("command", ["Regenerate answer", "Compare revisions", "Edit last message"])
async def test_the_new_palette_commands_say_why_when_there_is_nothing_yet(app_env, command):
    app = make_app("dg_text")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert {"System prompt", "Copy code block", "Copy reasoning", "Previous revision", "Next revision"} <= set(
            commands)
        result = commands[command].callback()
        if result is not None:
            await result
        await pilot.pause()
        assert any(("no answer" in n or "no sent message" in n) for n in notices(app))


async def test_typing_into_the_transcript_lands_in_the_message_box_and_turn_keys_keep_their_meaning(app_env):
    """A click or Tab into the transcript used to swallow the next message's characters silently."""
    app = make_app("dg_text")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        chat = app.chat
        await send(pilot, "hello")
        await wait_for_answer(pilot)
        answer = chat.query_one(AssistantMessage)
        # The transcript's own scroll area.
        chat.transcript.focus()
        await pilot.press("o", "k", "space", "?")
        assert chat.focused is chat.prompt and chat.prompt.text == "ok ?"
        await pilot.press("backspace", "backspace")   # and the next keys edit there too
        assert chat.prompt.text == "ok"
        # A focused answer keeps its keys: y copies it, and nothing reaches the message box.
        await pilot.press("ctrl+up")
        assert chat.focused is answer
        await pilot.press("y")
        assert app.clipboard == answer.content and chat.prompt.text == "ok" and chat.focused is answer
        # A key it does not bind goes on to the message box, at its cursor.
        await pilot.press("w")
        assert chat.focused is chat.prompt and chat.prompt.text == "okw"
        # A burst of typing (a fast typist, a paste) on a focused answer: only its first key is redirected, the
        # rest must reach the message box directly, not the answer's own keys (t, c, y).
        await pilot.press("ctrl+up")
        assert chat.focused is answer
        app.copy_to_clipboard("before")
        for character in " what can you do":   # as the terminal driver sends them, with no pause between
            key = events.Key("space" if character == " " else character, character)
            key.set_sender(app)
            app._driver.send_message(key)
        await wait_for(pilot, lambda: chat.prompt.text.endswith("do") or app.clipboard != "before", "the typing")
        assert chat.prompt.text == "okw what can you do" and app.clipboard == "before"
