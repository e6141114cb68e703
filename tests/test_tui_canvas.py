"""The live canvas widget: what each position shows, how it is styled and wrapped, and the colour scale."""

from __future__ import annotations

import numpy as np
from textual.app import App, ComposeResult

from engine.events import Step
from themes import canvas_variable_defaults
from tui.widgets.canvas import LEVELS, MASK_GLYPH, DenoisingCanvas, TokenTexts, uncertainty_levels
from tui.widgets.printable import flowing, unbroken


class Host(App):
    """Any app can host the canvas: it carries its own CSS; the theme supplies its colours."""

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return canvas_variable_defaults()

    def compose(self) -> ComposeResult:
        yield DenoisingCanvas()


def make_step(noise_is_mask: bool, prompt_positions: int = 0) -> Step:
    return Step(block=1, step=2, max_steps=8,
                canvas=np.array([10, 11, 12, 13], np.int32), candidates=np.array([20, 21, 22, 23], np.int32),
                accepted=np.array([True, False, True, False]), newly_accepted=1,
                scores=np.array([0.0, 0.5, 3.0, np.nan], np.float32), score_kind="entropy", temperature=1.0,
                noise_is_mask=noise_is_mask, prompt_positions=prompt_positions)


def texts_and_styles(canvas: DenoisingCanvas) -> tuple[list[str], list[tuple[str, bool, bool]]]:
    lines = [strip.text for strip in canvas._lines]
    segments = [(s.text, bool(s.style.bold), bool(s.style.dim)) for strip in canvas._lines[canvas.head_lines:] for s in strip]
    return lines, segments


async def test_accepted_positions_show_the_canvas_and_pending_ones_the_chosen_view():
    decoded = []
    texts = TokenTexts(lambda token: decoded.append(token) or f"<{token}>")
    app = Host()
    async with app.run_test(size=(80, 10)) as pilot:
        canvas = app.query_one(DenoisingCanvas)
        canvas.show(make_step(noise_is_mask=False), texts, "candidates", total_blocks=3)
        await pilot.pause()
        lines, segments = texts_and_styles(canvas)
        assert lines[0] == "block 2 of ≤3 · step 3/8 · accepted 2/4 (+1) · showing candidates"
        # The legend: the colour scale in the canvas's own styles, and what brightness means.
        assert lines[1] == "certain ████████ unsure (by entropy) · bright accepted, dim undecided"
        scale = [s.style.color for s in canvas._lines[1] if s.text == "█"]
        assert len(set(scale)) == LEVELS and scale[0] == canvas._palette()[0][0].color
        assert lines[2:] == ["<10><21><12><23>"]
        # Accepted: bold; pending: dim.
        assert [(bold, dim) for _, bold, dim in segments] == [(True, False), (False, True)] * 2
        canvas.show(make_step(noise_is_mask=False), texts, "noise", total_blocks=3)
        assert texts_and_styles(canvas)[0][2:] == ["<10><11><12><13>"]
        canvas.show(make_step(noise_is_mask=True), texts, "noise", total_blocks=None)
        lines, _ = texts_and_styles(canvas)
        assert lines[0].startswith("block 2 · step 3/8")
        assert lines[2:] == [f"<10>{MASK_GLYPH}<12>{MASK_GLYPH}"]
        # Each id is decoded once, however often it is drawn.
        assert sorted(decoded) == [10, 11, 12, 13, 21, 23]
        # Prompt positions at the start of a block (LLaDA-2) are not part of the canvas.
        canvas.show(make_step(noise_is_mask=True, prompt_positions=2), texts, "candidates", total_blocks=None)
        assert texts_and_styles(canvas)[0][2:] == ["<12><23>"]
        canvas.clear()
        assert canvas.display and canvas._lines == []  # keeps its place for the next block
        canvas.hide()
        assert not canvas.display


async def test_a_fills_given_text_is_drawn_fixed_and_edited_positions_flash():
    import dataclasses

    texts = TokenTexts(lambda token: f"<{token}>")
    app = Host()
    async with app.run_test(size=(100, 10)) as pilot:
        canvas = app.query_one(DenoisingCanvas)
        step = dataclasses.replace(make_step(noise_is_mask=True), fixed=np.array([True, False, False, True]),
                                   edited=np.array([False, False, True, False]))
        canvas.show(step, texts, "candidates", total_blocks=None)
        await pilot.pause()
        palette = canvas._palette()
        lines = [strip.text for strip in canvas._lines]
        assert lines[0] == "block 2 · step 3/8 · accepted 1/2 (+1) · 2 given · 1 edited · showing candidates"
        assert lines[1].endswith("bright accepted, dim undecided, given fixed, edited")
        # Given positions: their own text in the given style, never the candidate; holes keep the colour scale;
        # the edited position flashes (bold, reversed).
        segments = [(seg.text, seg.style) for seg in canvas._lines[2]]
        assert [text for text, _ in segments] == ["<10>", "<21>", "<12>", "<13>"]
        assert segments[0][1] == palette.given == segments[3][1] and segments[1][1] in palette.pending
        assert segments[2][1] == palette.edited and palette.edited.reverse and palette.edited.bold
        assert palette.given.dim and palette.given not in palette.pending + palette.accepted
        # The next step without edits draws that position as any accepted one again.
        canvas.show(dataclasses.replace(step, edited=np.zeros(4, bool)), texts, "candidates", total_blocks=None)
        assert list(canvas._lines[2])[2].style in palette.accepted
        assert "edited" not in canvas.header_text()


async def test_the_canvas_wraps_at_token_boundaries_to_its_width():
    texts = TokenTexts(lambda token: "abcdefg"[: token % 7 + 1] + "\n")
    length = 40
    step = Step(block=0, step=0, max_steps=4, canvas=np.arange(length, dtype=np.int32),
                candidates=np.arange(length, dtype=np.int32), accepted=np.ones(length, bool), newly_accepted=length,
                scores=np.zeros(length, np.float32), score_kind="confidence", temperature=None, noise_is_mask=True)
    app = Host()
    async with app.run_test(size=(30, 20)) as pilot:
        canvas = app.query_one(DenoisingCanvas)
        canvas.show(step, texts, "candidates", None)
        await pilot.pause()
        body = [strip.text for strip in canvas._lines[canvas.head_lines:]]
        assert canvas.head_lines > 2   # at 30 columns the header and the legend wrap
        assert all(len(line) <= canvas._width() for line in body) and len(body) > 1
        # Newlines are drawn as visible marks, and nothing is lost in the wrapping.
        assert "".join(body) == "".join(texts(i)[0] for i in range(length)) and "\n" not in "".join(body)
        assert canvas.size.height == len(canvas._lines)
        # A shorter frame keeps the height (no layout pass); the next answer starts afresh.
        short = Step(block=0, step=1, max_steps=4, canvas=np.arange(2, dtype=np.int32),
                     candidates=np.arange(2, dtype=np.int32), accepted=np.ones(2, bool), newly_accepted=0,
                     scores=np.zeros(2, np.float32), score_kind="confidence", temperature=None, noise_is_mask=True)
        tall = canvas.size.height
        canvas.show(short, texts, "candidates", None)
        canvas.clear()
        await pilot.pause()
        assert canvas.size.height == tall and canvas.display
        canvas.hide()
        canvas.show(short, texts, "candidates", None)
        await pilot.pause()
        assert canvas.size.height == canvas.head_lines + 1  # header and legend (wrapped), one line of tokens


def test_uncertainty_levels_go_from_certain_to_unsure():
    entropy = uncertainty_levels(np.array([0.0, 0.1, 1.0, 5.0, np.nan, np.inf]), "entropy")
    assert entropy.tolist()[0] == 0 and entropy.tolist()[-2:] == [LEVELS - 1, LEVELS - 1]
    assert np.all(np.diff(entropy[:4]) >= 0) and entropy[3] == LEVELS - 1
    confidence = uncertainty_levels(np.array([1.0, 0.9, 0.5, 0.0, np.nan]), "confidence")
    assert confidence.tolist() == [0, 1, 4, LEVELS - 1, LEVELS - 1]


def test_control_characters_never_reach_the_terminal_raw():
    raw = "a\x08b\x1b[2Jc\r\nd\te\x7f\x9b"
    assert flowing(raw) == "a\u2408b\u241b[2Jc\nd\te\u2421\ufffd"
    assert unbroken(raw) == "a\u2408b\u241b[2Jc↵↵d→e\u2421\ufffd"
    assert TokenTexts(lambda token: "\x08")(0) == ("\u2408", 1)


async def test_block_sparklines_wrap_onto_more_lines_and_draw_equal_counts_as_full_bars():
    import io

    from rich.console import Console

    from tui.widgets.block_steps import BlockSteps

    blocks = [[2, 2, 2], [1, 5]] + [[3, 1, 0, 4]] * 12

    class Blocks(Host):
        def compose(self) -> ComposeResult:
            yield BlockSteps(blocks)

    app = Blocks()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        steps = app.query_one(BlockSteps)
        assert steps.blocks == [tuple(b) for b in blocks] and steps.display
        assert steps.size.height == len(steps._lay_out(steps.content_size.width)) > 1
        console = Console(width=steps.content_size.width, record=True, file=io.StringIO())
        console.print(steps.render())
        lines = console.export_text().splitlines()
        assert lines[0].startswith("1 ███   2 ▁█   3 ") and all(len(line) <= steps.content_size.width for line in lines)
        assert "block 2: 2 steps, accepted per step 1 5" in steps.tooltip
        steps.add(14, (1, 2))
        assert steps.blocks[-1] == (1, 2)


async def test_block_sparklines_say_how_many_positions_llada21_editing_rewrote():
    import io

    from rich.console import Console

    from tui.widgets.block_steps import BlockSteps

    class Blocks(Host):
        def compose(self) -> ComposeResult:
            yield BlockSteps([[4, 4], [2, 6]], [3, 0])

    app = Blocks()
    async with app.run_test(size=(60, 10)) as pilot:
        await pilot.pause()
        steps = app.query_one(BlockSteps)
        console = Console(width=steps.content_size.width, record=True, file=io.StringIO())
        console.print(steps.render())
        assert console.export_text().splitlines()[0].startswith("1 ██ 3 edits   2 ▁█   ")
        assert "block 1: 2 steps, accepted per step 4 4, 3 edits" in steps.tooltip
        steps.add(2, (8,), 1)
        assert steps.edits == [3, 0, 1] and "block 3: 1 step, accepted per step 8, 1 edit" in steps.tooltip
