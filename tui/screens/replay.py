"""The replay view (ctrl+r on an answer): its recorded denoising, step by step, in the live canvas's widget
and colours.

The trajectory (engine.recording.trajectory) is decoded once, when the view opens; each frame is then one recorded
`Step` handed to the same `DenoisingCanvas` the live answer uses, with token texts from the trajectory itself
(so a replay needs no model). Per block, the header says its steps, how it stopped and LLaDA-2.1's edits,
and the sparklines under the canvas are every block's accepted positions per step.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from engine.recording.trajectory import BlockRecord, Trajectory

from ..widgets.block_steps import BlockSteps, edits_text
from ..config import CANVAS_MODES, CanvasMode
from ..widgets.canvas import MASK_GLYPH, DenoisingCanvas, TokenTexts
from ..widgets.printable import flowing
from ..words import block_position, count, human

SPEEDS = (1, 2, 4, 8, 16, 32, 64)   # steps per second
DEFAULT_SPEED = 8
TEXT_SHOWN = 600                    # characters of the text committed before the shown block


@dataclass(frozen=True)
class BlockIndex:
    """Where each block's frames start, what each accepted per step, and its record."""

    first_frames: tuple[int, ...]
    accepted: tuple[tuple[int, ...], ...]
    records: tuple[BlockRecord | None, ...]

    @classmethod
    def of(cls, trajectory: Trajectory) -> BlockIndex:
        blocks = sorted({frame.block for frame in trajectory.frames})
        firsts = tuple(next(i for i, f in enumerate(trajectory.frames) if f.block == b) for b in blocks)
        accepted = tuple(tuple(f.newly_accepted for f in trajectory.frames if f.block == b) for b in blocks)
        by_number = {record.block: record for record in trajectory.blocks}
        return cls(firsts, accepted, tuple(by_number.get(b) for b in blocks))

    def block_of(self, frame: int) -> int:
        """The index (among recorded blocks) of the block `frame` belongs to."""
        return max(i for i, first in enumerate(self.first_frames) if first <= frame)


class ReplayScreen(Screen[None]):
    DEFAULT_CSS = """
    ReplayScreen {
        background: $background;
    }
    ReplayScreen #replay-title {
        padding: 0 1;
        text-style: bold;
        color: $secondary;
    }
    ReplayScreen #replay-position, ReplayScreen #replay-block {
        padding: 0 1;
        color: $text-muted;
    }
    ReplayScreen #replay-body {
        height: 1fr;
    }
    ReplayScreen #replay-text {
        padding: 0 1;
        margin: 1 0 0 0;
        color: $text-muted;
    }
    ReplayScreen DenoisingCanvas {
        margin: 1 1 0 1;
    }
    """

    BINDINGS = [
        # (the position line says ←/→: the footer has no room for them)
        Binding("left", "step(-1)", "Step back", show=False),
        Binding("right", "step(1)", "Step", show=False),
        # The footer fits 80 columns: the speed keys are on the position line too ("+/- speed").
        Binding("space", "play", "Play"),
        Binding("left_square_bracket,pageup", "block(-1)", "Prev block"),
        Binding("right_square_bracket,pagedown", "block(1)", "Next block"),
        Binding("plus,equals_sign", "speed(1)", "Faster", show=False),
        Binding("minus", "speed(-1)", "Slower", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("m", "toggle_mode", "Noise on/off"),
        Binding("escape,q", "close", "Close"),
    ]

    def __init__(self, trajectory: Trajectory, title: str, canvas_mode: CanvasMode = "candidates"):
        super().__init__()
        self.trajectory = trajectory
        self.replay_title = title
        self.mode: CanvasMode = canvas_mode
        self.index = 0                 # the frame shown
        self.speed = DEFAULT_SPEED
        self.playing = False
        self.blocks = BlockIndex.of(trajectory)
        texts = trajectory.token_texts
        self.token_texts = TokenTexts(lambda token: texts.get(int(token), MASK_GLYPH))
        self._timer = None

    def compose(self) -> ComposeResult:
        yield Static(self.replay_title, id="replay-title", markup=False)
        yield Static("", id="replay-position", markup=False)
        yield Static("", id="replay-block", markup=False)
        # Not focusable: the arrows, Home/End and PageUp/PageDown are the view's (a wheel still scrolls it).
        with VerticalScroll(id="replay-body", can_focus=False):
            canvas = DenoisingCanvas(keep_height=False, id="replay-canvas")
            canvas.blocks_at_most = False   # a recording knows how many blocks there were
            yield canvas
            yield BlockSteps(self.blocks.accepted, [r.edits if r else 0 for r in self.blocks.records],
                             id="replay-steps")
            yield Static("", id="replay-text", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        # After the first layout: the canvas wraps its positions to its width, unknown before.
        self.call_after_refresh(self.show_frame, 0)

    @property
    def canvas(self) -> DenoisingCanvas:
        return self.query_one(DenoisingCanvas)

    @property
    def frame_count(self) -> int:
        return len(self.trajectory.frames)

    # ---- drawing ------------------------------------------------------------------------------------------

    def show_frame(self, index: int) -> None:
        self.index = min(max(index, 0), self.frame_count - 1)
        frame = self.trajectory.frames[self.index]
        blocks = len(self.blocks.first_frames)
        self.canvas.show(frame, self.token_texts, self.mode, blocks)
        self._show_position()
        block = self.blocks.block_of(self.index)
        record = self.blocks.records[block]
        accepted = self.blocks.accepted[block]
        stats = f"block {frame.block + 1}: {count(len(accepted), 'step')}"
        if record is not None:
            stats += f", {human(record.stop_reason)}{',' + edits_text(record.edits) if record.edits else ''}"
        stats += f" · accepted per step {sum(accepted) / max(len(accepted), 1):.1f} (" + " ".join(map(str, accepted))
        self.query_one("#replay-block", Static).update(stats + ")")
        before = "".join(r.content_delta for r in self.blocks.records[:block] if r is not None)
        shown = before if len(before) <= TEXT_SHOWN else "…" + before[-TEXT_SHOWN:]
        self.query_one("#replay-text", Static).update(f"committed before this block: {flowing(shown)}" if shown
                                                      else "the first block: nothing committed before it")

    def _show_position(self) -> None:
        frame = self.trajectory.frames[self.index]
        state = "playing" if self.playing else "paused"
        block = block_position(self.blocks.block_of(self.index), len(self.blocks.first_frames), at_most=False)
        self.query_one("#replay-position", Static).update(
            f"step {self.index + 1}/{self.frame_count} ({block}, its step {frame.step + 1}/{frame.max_steps}) · "
            f"{state} · {self.speed} steps/s (+/-) · ←/→ step")

    # ---- keys -----------------------------------------------------------------------------------------------

    def action_step(self, delta: int) -> None:
        self._pause()
        self.show_frame(self.index + delta)

    def action_jump(self, index: int) -> None:
        self._pause()
        self.show_frame(index if index >= 0 else self.frame_count - 1)

    def action_block(self, delta: int) -> None:
        """The first step of the previous / next block (back from inside a block: its own first step)."""
        self._pause()
        firsts = self.blocks.first_frames
        block = self.blocks.block_of(self.index)
        if delta < 0 and self.index > firsts[block]:
            target = block
        else:
            target = min(max(block + delta, 0), len(firsts) - 1)
        self.show_frame(firsts[target])

    def action_play(self) -> None:
        if self.playing:
            self._pause()
            return
        if self.index >= self.frame_count - 1:
            self.show_frame(0)   # at the end, play starts over
        self.playing = True
        self._restart_timer()
        self._show_position()

    def action_speed(self, delta: int) -> None:
        position = SPEEDS.index(self.speed) + delta
        self.speed = SPEEDS[min(max(position, 0), len(SPEEDS) - 1)]
        if self.playing:
            self._restart_timer()
        self._show_position()

    def action_toggle_mode(self) -> None:
        self.mode = CANVAS_MODES[(CANVAS_MODES.index(self.mode) + 1) % len(CANVAS_MODES)]
        self.show_frame(self.index)

    def action_close(self) -> None:
        self._pause()
        self.dismiss(None)

    def _tick(self) -> None:
        if self.index >= self.frame_count - 1:
            self._pause()
            return
        self.show_frame(self.index + 1)

    def _restart_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_interval(1 / self.speed, self._tick)

    def _pause(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self.playing:
            self.playing = False
            self._show_position()
