"""Screenshots of the main layouts (pytest-textual-snapshot). Update with `pytest --snapshot-update`.

Deterministic: a fixed terminal size, an empty HF cache and fresh folders, the model loaded before the
shot, and nothing on screen that depends on the clock or on timing.
"""

from __future__ import annotations

import pytest
from tui_helpers import app_env, make_app, wait_for, wait_for_model  # noqa: F401  (app_env is a fixture)

SIZE = (110, 34)


@pytest.fixture(autouse=True)
def _no_machine_notices(monkeypatch):
    """A shot must not depend on the machine: on a Linux CPU without OpenBLAS the engine's slow-BLAS notice
    would show as a notification over the layout (it did on a fresh CI machine)."""
    from engine.cpu import device
    monkeypatch.setattr(device, "notices", lambda: ())


async def _model_loaded(pilot) -> None:
    await wait_for_model(pilot)
    # The prompt's token count arrives from a worker thread after a debounce: wait for it, not for time.
    await wait_for(pilot, lambda: "tokens" in str(pilot.app.screen.query_one("#token-count").render()),
                   "the token count")
    # That wait lasts long enough for the prompt's cursor to blink off; a shot must not depend on when it is taken.
    pilot.app.screen.query_one("#prompt").cursor_blink = False
    await pilot.pause()


async def _opened(pilot, conversation: int) -> None:
    """Open a saved conversation and wait for the prompt's token count to include its history: the count comes
    from a worker after a debounce, and a CI shot of the compare dialog caught the count from before the open."""
    count = pilot.app.screen.query_one("#token-count")
    before = str(count.render())
    await pilot.app.session.open(conversation)
    await wait_for(pilot, lambda: str(count.render()) != before, "the token count with the history")
    await pilot.pause()


def test_empty_chat(app_env, snap_compare):
    assert snap_compare(make_app("dg_text"), terminal_size=SIZE, run_before=_model_loaded)


async def _sampler_panel_open(pilot) -> None:
    await _model_loaded(pilot)
    await pilot.press("ctrl+b")
    await pilot.pause()


def test_sampler_panel_open(app_env, snap_compare):
    assert snap_compare(make_app("dg_text"), terminal_size=SIZE, run_before=_sampler_panel_open)


def test_llada2_sampler_panel(app_env, snap_compare):
    assert snap_compare(make_app("llada2"), terminal_size=SIZE, run_before=_sampler_panel_open)


def test_empty_chat_with_the_demo_and_its_example_prompts(app_env, snap_compare):
    from tui.demo_models import default_demo, demo_card
    from tui.widgets.example_prompts import ExamplePrompt

    shown = len(demo_card(default_demo()).examples)

    async def loaded(pilot) -> None:
        await _model_loaded(pilot)
        await wait_for(pilot, lambda: len(pilot.app.chat.query(ExamplePrompt)) == shown, "the example prompts")
        await pilot.pause()

    app = make_app(None)
    app.options.model = str(default_demo())
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


def test_model_picker(app_env, snap_compare):
    async def scanned(pilot) -> None:
        picker = pilot.app.screen
        await wait_for(pilot, lambda: "cache" in str(picker.query_one("#cache-status").render())
                       and "Scanning" not in str(picker.query_one("#cache-status").render()), "the cache scan")
        await pilot.pause()

    assert snap_compare(make_app(None), terminal_size=SIZE, run_before=scanned)


def _seed_revisions(store_path) -> int:
    """A conversation whose answer has three revisions made with other settings (fixed numbers, no clock)."""
    from tui.store import ConversationStore

    with ConversationStore(store_path, clock=lambda: 1_700_000_000.0) as store:
        conversation = store.create("Tuning the sampler", "dg_text")
        store.add_message(conversation.id, "user", "Name three colours.")
        runs = [
            ({"temp": 1.0, "max_denoising_steps": 48}, [[9, 6, 4, 3, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 3]],
             "Red, green and blue.", 1.84),
            ({"temp": 0.6, "max_denoising_steps": 48}, [[14, 10, 6, 2]], "Red, blue, yellow.", 0.52),
            ({"temp": 0.6, "max_denoising_steps": 8}, [[16, 10, 4, 2]], "Red. Green. Blue.", 0.47),
        ]
        message = None
        for number, (settings, accepted, text, seconds) in enumerate(runs):
            stats = {"finish_reason": "stop", "generated_tokens": 5, "total_s": seconds,
                     "tokens_per_s": round(5 / seconds, 3), "steps_per_block": [len(block) for block in accepted],
                     "accepted_per_step": accepted, "prompt_tokens": 18, "encoded_tokens": 18 if number == 0 else 1}
            if message is None:
                message = store.add_message(conversation.id, "assistant", text, stats=stats, settings=settings)
            else:
                store.add_revision(message.id, text, stats=stats, settings=settings)
        return conversation.id


def test_compare_revisions(app_env, snap_compare):
    from tui.store import default_db_path

    conversation = _seed_revisions(default_db_path())

    async def compared(pilot) -> None:
        await _model_loaded(pilot)
        await _opened(pilot, conversation)
        await pilot.press("ctrl+k")
        await pilot.pause()

    assert snap_compare(make_app("dg_text"), terminal_size=SIZE, run_before=compared)


def test_attachment_chip_with_a_thumbnail(app_env, snap_compare):
    from PIL import Image

    # A BMP: its size in bytes (shown on the chip) does not depend on an encoder's choices.
    picture = app_env / "gradient.bmp"
    pixels = [(6 * x, 160, 255 - 6 * y) for y in range(40) for x in range(40)]
    image = Image.new("RGB", (40, 40))
    image.putdata(pixels)
    image.save(picture)

    async def attached(pilot) -> None:
        await _model_loaded(pilot)
        chat = pilot.app.chat
        count = pilot.app.screen.query_one("#token-count")
        empty = str(count.render())
        chat.attach(str(picture))
        await wait_for(pilot, lambda: any(t.loaded for t in chat.query("Thumbnail")), "the thumbnail")
        # The count with the image's tokens comes from a worker thread after a debounce: a shot taken before it
        # showed "0 / 262,144 tokens" (seen once in a fresh clone's CI run).
        await wait_for(pilot, lambda: str(count.render()) != empty, "the token count with the image")
        await pilot.pause()

    assert snap_compare(make_app("dg_vision"), terminal_size=SIZE, run_before=attached)


def _replay_at(trajectory: str, keys: tuple[str, ...]):
    """The replay view of a recorded answer (a fixture file, so the frames never change), after `keys`."""
    from tui.store import default_db_path

    from tui_helpers import seed_recorded_answer

    conversation = seed_recorded_answer(default_db_path(), trajectory)

    async def replayed(pilot) -> None:
        await _model_loaded(pilot)
        await _opened(pilot, conversation)
        await pilot.press("ctrl+r", *keys)
        await pilot.pause()

    return replayed


def test_replay_view_of_a_fill(app_env, snap_compare):
    # Block 2, step 3: the given text dim and fixed, the holes resolving.
    assert snap_compare(make_app("dg_text"), terminal_size=SIZE,
                        run_before=_replay_at("dg_fill.traj", ("right_square_bracket", "right", "right")))


def test_replay_view_with_llada21_edits(app_env, snap_compare):
    # Block 2, step 4: positions edited in this step flash; the block stats count the edits.
    assert snap_compare(make_app("dg_text"), terminal_size=SIZE,
                        run_before=_replay_at("llada21_edits.traj", ("right_square_bracket", "right", "right",
                                                                     "right")))
