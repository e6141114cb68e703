"""Finding your way as a new user (issue 24): quit and help in the footer at 80 columns, ctrl+c, the example
prompts, the help screen's tables, the slash-command menu."""

from __future__ import annotations

import dataclasses

import pytest

from tui.demo_models import demo_card
from tui.screens.dialogs import ConfirmScreen
from tui.screens.help import HelpScreen
from tui.screens.interrupt import QuitScreen
from tui.screens.model_picker import DEMO_CHECKPOINT
from tui.widgets.example_prompts import ExamplePrompt
from tui.widgets.messages import AssistantMessage, UserMessage
from tui.widgets.slash_menu import SlashMenu

from tui_helpers import (  # noqa: F401  (app_env is a fixture)
    app_env,
    make_app,
    notices,
    paced_worker,
    send,
    wait_for,
    wait_for_answer,
    wait_for_model,
    wait_for_screen,
)

SMALL = (80, 24)
MEDIUM = (100, 30)


def screen_lines(app) -> list[str]:
    """The screen as the terminal shows it, one string per row."""
    return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]


def footer_line(app) -> str:
    return screen_lines(app)[-1]


# ---- item 8: quit and help in the footer, ctrl+c ---------------------------------------------------------


@pytest.mark.parametrize("size", [SMALL, MEDIUM])
async def test_the_footer_keeps_chats_model_help_and_quit_at_80_columns(app_env, size):
    app = make_app("dg_text")
    async with app.run_test(size=size) as pilot:
        await wait_for_model(pilot)
        await pilot.pause()
        footer = footer_line(app)
        for label in ("^o Chats", "^l Model", "f1 Help", "^q Quit", "esc Cancel"):
            assert label in footer, (label, footer)


async def test_ctrl_c_with_nothing_selected_asks_before_quitting(app_env):
    app = make_app("dg_text")
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_model(pilot)
        await pilot.press("ctrl+c")
        await wait_for_screen(pilot, QuitScreen, "the quit question")
        assert not any("ctrl+q" in n.lower() and "quit" in n.lower() for n in notices(app))
        await pilot.press("escape")   # stays
        await wait_for(pilot, lambda: not isinstance(app.screen, QuitScreen), "the question to close")
        assert app.is_running
        await pilot.press("ctrl+c")
        await wait_for_screen(pilot, QuitScreen, "the quit question again")
        await pilot.press("ctrl+c")   # twice: quit
        await wait_for(pilot, lambda: not app.is_running, "the app to quit")


async def test_ctrl_c_cancels_a_running_answer(app_env):
    app = make_app("dg_text", max_tokens=256, max_denoising_steps=48, seed=3,
                   make_worker=lambda notify: paced_worker(notify, 0.02))
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_model(pilot)
        await send(pilot, "hello there")
        await wait_for(pilot, lambda: app.session.generation is not None, "the answer to be written")
        await pilot.press("ctrl+c")   # nothing selected: the prompt's own ctrl+c (copy) passes it on
        await wait_for_answer(pilot)
        assert not isinstance(app.screen, QuitScreen)
        assert any("Cancelled" in n for n in notices(app))
        assert app.chat.query_one(AssistantMessage).status == "cancelled"


# ---- item 7: the slash-command menu -----------------------------------------------------------------------


async def test_typing_a_slash_lists_the_commands_and_filters_them(app_env):
    app = make_app("dg_text")
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_model(pilot)
        menu = app.chat.query_one(SlashMenu)
        assert not menu.display
        await pilot.press("/")
        await pilot.pause()
        assert menu.display and {"/system", "/fill", "/image", "/help"} <= set(menu.shown)
        shown = "\n".join(screen_lines(app))
        assert "/system TEXT" in shown and "/help" in shown   # on screen at 80x24, above the message box
        await pilot.press("f", "i")
        await pilot.pause()
        assert menu.shown == ("/fill",)
        await pilot.press("backspace", "backspace", "s", "y", "tab")   # Tab completes the first match
        assert app.chat.prompt.value == "/system "
        await pilot.press(*"Be brief.")
        assert not menu.display   # typing the argument: the menu has done its job
        await pilot.press("enter")
        await pilot.pause()
        assert app.session.system_prompt == "Be brief." and app.chat.prompt.value == ""


async def test_slash_help_opens_the_help_and_sends_nothing(app_env):
    app = make_app("dg_text")
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_model(pilot)
        app.chat.prompt.focus()
        await pilot.press(*"/help", "enter")
        await wait_for_screen(pilot, HelpScreen, "the help")
        assert not app.chat.query(UserMessage) and app.session.generation is None
        assert app.chat.prompt.value == ""


async def test_an_unknown_slash_word_asks_before_it_is_sent_as_text(app_env):
    app = make_app("dg_text")
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_model(pilot)
        app.chat.prompt.focus()
        await pilot.press(*"/usr/bin")
        await pilot.pause()
        assert app.chat.query_one(SlashMenu).shown == ()
        assert any("/usr/bin: no such command" in line for line in screen_lines(app))
        await pilot.press(*" holds it")
        await pilot.press("enter")
        await wait_for_screen(pilot, ConfirmScreen, "the question")
        assert "/usr/bin is not a command" in app.screen.question
        await pilot.press("escape")   # not sent, still in the box
        await wait_for(pilot, lambda: app.screen is app.chat, "the chat")
        assert not app.chat.query(UserMessage) and app.chat.prompt.value == "/usr/bin holds it"
        await pilot.press("enter")
        await wait_for_screen(pilot, ConfirmScreen, "the question again")
        await pilot.press("enter")    # "Send as text" has the focus
        await wait_for(pilot, lambda: app.chat.query(UserMessage), "the message")
        await wait_for_answer(pilot)
        assert [u.content for u in app.chat.query(UserMessage)] == ["/usr/bin holds it"]
        # `//` sends a leading slash without asking.
        app.chat.prompt.value = "//help is a word"
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(app.chat.query(UserMessage)) == 2, "the second message")
        assert app.chat.query(UserMessage).last().content == "/help is a word"
        await wait_for_answer(pilot)


# ---- item 9: the example prompts --------------------------------------------------------------------------


async def test_the_first_tab_lands_on_a_visible_example_and_enter_sends_it(app_env):
    card = demo_card(DEMO_CHECKPOINT)
    app = make_app(None)
    app.options.model = str(DEMO_CHECKPOINT)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_model(pilot)
        await wait_for(pilot, lambda: len(app.chat.query(ExamplePrompt)) == len(card.examples), "the examples")
        assert app.focused is app.chat.prompt
        await pilot.press("tab")
        first = app.chat.query(ExamplePrompt).first()
        assert app.focused is first
        await pilot.pause()
        # Visibly focused: its row is drawn in the accent colour, unlike the other examples.
        assert first.styles.background != app.chat.query(ExamplePrompt).last().styles.background
        assert first.region.y < SMALL[1] - 1 and first.region.height == 1   # on screen
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.query(AssistantMessage), "the answer to start")
        await wait_for_answer(pilot)
        assert [u.content for u in app.chat.query(UserMessage)] == [card.examples[0]]


# ---- item 11: the help screen's tables --------------------------------------------------------------------


@pytest.mark.parametrize("size", [SMALL, MEDIUM])
async def test_the_help_table_on_a_focused_message_does_not_wrap_word_by_word(app_env, size):
    app = make_app("dg_text")
    async with app.run_test(size=size) as pilot:
        await wait_for_model(pilot)
        await pilot.press("f1")
        await wait_for_screen(pilot, HelpScreen, "the help")
        await pilot.pause(0.3)
        on_a_message = list(app.screen.query("MarkdownTable"))[1]
        # Five keys; at 80 columns each row takes at most three lines (four took 33 lines, one word each).
        assert on_a_message.size.height <= 5 * 3 + 4, on_a_message.size
        on_a_message.scroll_visible(animate=False)
        await pilot.pause(0.3)
        rows = [line for line in screen_lines(app) if "│" in line]
        assert any("edit it in the message box" in row for row in rows), rows


# ---- item 18: images with a text-only model ---------------------------------------------------------------


def footer_key(app, action: str):
    return next(key for key in app.chat.query("FooterKey") if key.action == action)


async def test_a_text_only_model_greys_out_images_and_asks_for_no_path(app_env):
    from tui.commands import app_commands

    app = make_app("dg_text")
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_model(pilot)
        await pilot.pause()
        assert not app.model_info.supports_images
        image_key = footer_key(app, "attach_image")
        assert image_key.has_class("-disabled") and "text-only" in str(image_key.tooltip)
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert app.screen is app.chat   # no path prompt
        app.chat.action_attach_image()       # (what the palette runs)
        await pilot.pause()
        assert app.screen is app.chat
        assert any("text-only" in n for n in notices(app))
        attach = next(c for c in app_commands(app) if c.title == "Attach image")
        assert "text-only" in attach.help
        # `/image ` lists no paths to complete: nothing can be attached.
        app.chat.prompt.value = "/image /"
        await pilot.pause()
        assert not app.chat.query_one("#completions").display


async def test_a_vision_model_offers_images(app_env):
    from tui.commands import app_commands

    app = make_app("dg_vision")
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_model(pilot)
        await pilot.pause()
        assert not footer_key(app, "attach_image").has_class("-disabled")
        attach = next(c for c in app_commands(app) if c.title == "Attach image")
        assert "Not available" not in attach.help
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: app.screen.query("#dialog-input"), "the path prompt")


# ---- item 10: the conversation list -------------------------------------------------------------------------


def seed_conversations(app_env) -> list[int]:
    from tui.store import ConversationStore, default_db_path

    ids = []
    with ConversationStore(default_db_path()) as store:
        for title, model in (("Zebras at dawn", "dg_text"), ("Otters at dusk", "llada2")):
            conversation = store.create(title, model)
            store.add_message(conversation.id, "user", title)
            store.add_message(conversation.id, "assistant", "Indeed.")
            ids.append(conversation.id)
    return ids


async def test_the_list_opens_on_its_search_shows_ids_and_offers_new(app_env):
    from textual.widgets import Input, OptionList

    from tui.screens.conversations import ConversationsScreen

    ids = seed_conversations(app_env)
    app = make_app("dg_text")
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_model(pilot)
        await pilot.press("ctrl+o")
        await wait_for_screen(pilot, ConversationsScreen, "the list")
        await pilot.pause()
        assert isinstance(app.focused, Input)   # typing searches at once
        listed = "\n".join(screen_lines(app))
        assert f"#{ids[0]} · dg_text" in listed and f"#{ids[1]} · llada2" in listed   # ids, on screen at 80x24
        assert "New conversation" in listed and "ctrl+n new" in listed
        await pilot.press(*"zebra")
        await pilot.pause()
        options = app.screen.query_one(OptionList)
        assert options.option_count == 1 and f"#{ids[0]}" in str(options.get_option_at_index(0).prompt)
        await pilot.press("enter")   # Enter in the search opens the best hit
        await wait_for(pilot, lambda: app.session.conversation_id == ids[0], "the conversation")
        # ctrl+n in the list starts a new conversation.
        await pilot.press("ctrl+o")
        await wait_for_screen(pilot, ConversationsScreen, "the list again")
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: app.session.conversation_id is None, "a new conversation")
        assert app.screen is app.chat and not app.chat.query(UserMessage)


async def test_a_conversation_is_labelled_with_the_model_that_last_answered(app_env):
    from tui.store import ConversationStore, default_db_path

    ids = seed_conversations(app_env)   # the first was started with dg_text
    app = make_app("llada2")
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_model(pilot)
        await app.session.open(ids[0])
        await pilot.pause()
        await send(pilot, "and now?")
        await wait_for_answer(pilot)
    with ConversationStore(default_db_path()) as store:
        assert {c.id: c.model for c in store.list()}[ids[0]] == "llada2"


async def test_continue_last_opens_the_most_recent_conversation_at_start(app_env):
    from tui.config import load_config, save_config

    ids = seed_conversations(app_env)
    config = load_config().config
    save_config(dataclasses.replace(config, continue_last=True))
    app = make_app("dg_text")
    async with app.run_test(size=SMALL) as pilot:
        await wait_for_model(pilot)
        await wait_for(pilot, lambda: app.session.conversation_id == ids[-1], "the last conversation")
        assert [u.content for u in app.chat.query(UserMessage)] == ["Otters at dusk"]


# ---- item 15: remote mode ---------------------------------------------------------------------------------


async def test_against_serve_answers_get_their_sparklines_and_a_live_tok_per_s(app_env, monkeypatch):
    from engine.settings import Settings
    from tui.app import AppOptions, DiffusionChatApp
    from tui.widgets.status_bar import StatusBar

    from serve_helpers import serving

    activities = []
    original = StatusBar.set_activity
    monkeypatch.setattr(StatusBar, "set_activity", lambda self, text: activities.append(text) or original(self, text))
    settings = Settings(max_tokens=40, max_denoising_steps=24, seed=4)
    with serving("dg_text") as server:
        app = DiffusionChatApp(AppOptions(server=server.url, settings=settings))
        async with app.run_test(size=SMALL) as pilot:
            await wait_for_model(pilot)
            assert app.model_info.remote and app.model_info.frames
            await send(pilot, "hi")
            await wait_for_answer(pilot)
            answer = app.chat.query(AssistantMessage).last()
            saved = app.store.get_message(answer.message_id)
            # One sparkline per block, from the engine's numbers the wire now carries.
            assert answer.block_steps.blocks and len(answer.block_steps.blocks) == len(saved.stats["steps_per_block"])
            assert [list(b) for b in answer.block_steps.blocks] == saved.stats["accepted_per_step"]
    live = [text for text in activities if "this block" in text]
    assert live and all(float(text.split(" tok/s")[0]) > 0 for text in live), live


async def test_a_long_model_id_keeps_the_numbers_on_a_100_column_status_bar(app_env):
    app = make_app("dg_text")
    async with app.run_test(size=MEDIUM) as pilot:
        await wait_for_model(pilot)
        path = ("/Users/me/.cache/huggingface/hub/models--mlx-community--diffusiongemma-26B-A4B-it-4bit/"
                "snapshots/0123abc")   # what mlx-vlm reports as the model's id
        app.chat.status_bar.set_model(path, "DiffusionGemma (remote, mlx-vlm)")
        app.chat.status_bar.set_activity("123.4 tok/s │ 10 steps, 5 blocks │ 0.9 s │ stop")
        await pilot.pause()
        status = screen_lines(app)[-2]
        assert "123.4 tok/s" in status and "0.9 s │ stop" in status, status
        # The id gave way (its folder name kept, its middle cut), then the family, which the model implies: the
        # line still says the answers come from a server.
        assert "diffusiongem…" in status and path not in status
        assert "4bit │ remote │ thinking off │ 123.4 tok/s" in status
        assert app.chat.status_bar.tooltip == f"{path} · DiffusionGemma (remote, mlx-vlm)"   # in full, on hover
