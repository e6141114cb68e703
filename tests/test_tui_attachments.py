"""Images in the app: the attach command and dialog, the chips, text-only models refusing them, and a vision
checkpoint reading one (Pilot, the real engine, the tiny fixture checkpoints)."""

from __future__ import annotations

from textual.widgets import Input

from engine.events import Started
from tui.screens.dialogs import TextPromptScreen
from tui.widgets.attachments import AttachmentChip
from tui.widgets.messages import AssistantMessage, UserMessage
from tui.widgets.thumbnail import Thumbnail

from tui_helpers import (  # noqa: F401  (app_env is a fixture)
    CHECKPOINTS,
    app_env,
    engine_events,
    make_app,
    notices,
    send,
    wait_for,
    wait_for_answer,
    wait_for_model,
    wait_for_screen,
)

SIZE = (110, 40)


async def test_a_text_only_model_refuses_images_at_attach_time(app_env, tmp_path):
    from PIL import Image

    good = tmp_path / "cat.png"
    Image.new("RGB", (64, 48), "orange").save(good)
    app = make_app("dg_text")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        chat = app.chat
        chat.prompt.value = f"/image {good}"
        await pilot.press("enter")
        await pilot.pause()
        assert not chat.attachments.attachments
        assert any("dg_text is text-only and cannot read images" in n for n in notices(app))


async def test_a_vision_checkpoint_takes_the_attached_image(app_env, tmp_path, monkeypatch):
    from PIL import Image

    picture = tmp_path / "cat.png"
    Image.new("RGB", (64, 48), "orange").save(picture)
    app = make_app("dg_vision", max_tokens=16, max_denoising_steps=3)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        assert app.model_info.supports_images
        started = engine_events(app, monkeypatch, Started)
        chat = app.chat
        chat.prompt.value = f"/image {picture}"
        await pilot.press("enter")
        await pilot.pause()
        assert [a.name for a in chat.attachments.attachments] == ["cat.png"]
        # The chip tells what the image costs with this model's processor.
        assert chat.attachments.attachments[0].label.endswith(
            f" · {app.model_info.image_budget.soft_token_count(64, 48)} tokens")
        await send(pilot, "what is this?")
        await wait_for_answer(pilot)
        assert not chat.attachments.attachments  # sent with the message
        # The sent message shows the image: a thumbnail (decoded off the UI thread) and its name.
        user = chat.query_one(UserMessage)
        assert "cat.png" in str(user.query_one(".user-image-label").render())
        await wait_for(pilot, lambda: user.query_one(Thumbnail).loaded, "the message's thumbnail")
        stored = app.store.get(app.session.conversation_id).messages[0]
        assert stored.images == (str(picture.resolve()),)
        # The image's soft tokens (about 65 for this processor) are in the prompt.
        assert started[0].prompt_tokens > 80
        # The next turn keeps the image in its turn: the prompt grows and its start (image included) comes
        # from the conversation's cache instead of being encoded again.
        await send(pilot, "and now?")
        await wait_for_answer(pilot)
        assert started[1].prompt_tokens > started[0].prompt_tokens
        assert started[1].encoded_tokens < started[1].prompt_tokens - 60
        assert [a.status for a in chat.query(AssistantMessage)] == ["complete", "complete"]


async def test_image_chips_show_size_and_can_be_removed_before_sending(app_env, tmp_path):
    from PIL import Image

    good = tmp_path / "cat.png"
    Image.new("RGB", (64, 48), "orange").save(good)
    not_an_image = tmp_path / "notes.png"
    not_an_image.write_text("just text")
    app = make_app(None)  # no model yet: attachments are checked for being images only
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("escape")  # close the model picker
        chat = app.chat
        chat.prompt.value = f"/image {tmp_path}/missing.png"
        await pilot.press("enter")
        chat.prompt.value = f"/image {not_an_image}"
        await pilot.press("enter")
        await pilot.pause()
        assert any("image not found" in n for n in notices(app))
        assert any("notes.png is not an image" in n for n in notices(app))
        assert not chat.attachments.attachments and chat.prompt.value == f"/image {not_an_image}"
        chat.prompt.value = f"/image {good}"
        await pilot.press("enter")
        await pilot.pause()
        chips = list(chat.query(AttachmentChip))
        assert len(chips) == 1 and chat.prompt.value == ""
        assert str(chips[0].label).startswith(f"cat.png · {good.stat().st_size} B · 64×48")
        await pilot.click(AttachmentChip)
        await pilot.pause()
        assert not chat.attachments.attachments and not chat.attachments.display
        # Sending with an attachment and a text-only model is refused with a clear notice.
        chat.attach(str(good))
        await pilot.pause()
        app.load_model(str(CHECKPOINTS / "dg_text"))
        await wait_for_model(pilot)
        await pilot.pause()
        assert any("text-only" in n for n in notices(app))
        chat.prompt.focus()
        chat.prompt.value = "describe"
        await pilot.press("enter")
        await pilot.pause()
        assert app.session.generation is None and chat.prompt.value == "describe"
        assert any("cannot read images" in n for n in notices(app))


async def test_path_completion_in_the_attach_dialog(app_env, tmp_path):
    (tmp_path / "pictures").mkdir()
    (tmp_path / "pictures" / "holiday-photo.png").write_bytes(b"x")
    app = make_app("dg_vision")  # (a text-only model asks for no path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_model(pilot)
        await pilot.press("ctrl+f")
        await wait_for_screen(pilot, TextPromptScreen, "the path prompt")
        dialog_input = app.screen.query_one("#dialog-input", Input)
        await pilot.press(*f"{tmp_path}/pic")
        await pilot.pause(0.1)
        await pilot.press("right")  # accept the suggestion
        await pilot.press(*"hol")
        await pilot.pause(0.1)
        await pilot.press("right")
        assert dialog_input.value == f"{tmp_path}/pictures/holiday-photo.png"
