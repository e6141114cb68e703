"""A recorded trajectory drawn as the live canvas draws it, for sharing: an animated SVG (SMIL, plays in
browsers, loops) or an animated GIF (Pillow).

Colours are the default theme's (themes/dark.toml, read as TOML: no Textual here): settled positions bright
and bold, graded from confident (canvas-low-entropy) to unsure (canvas-high-entropy) by the step's scores,
unsettled ones dim showing the model's candidate, a fill's given text dim in the foreground colour, positions
LLaDA-2.1 just edited in the accent colour. Each step is one frame; a block's last frame is held a little.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from html import escape
from importlib import resources
from pathlib import Path

import numpy as np
from rich.cells import cell_len

from engine.recording.trajectory import Trajectory

from .widgets.printable import unbroken
from .words import block_position

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

LEVELS = 8
EMPTY_GLYPH = "·"
CELL_W, LINE_H, FONT_PX, PAD = 8.4, 18, 14, 12


@dataclass(frozen=True)
class Palette:
    background: str
    foreground: str
    muted: str
    accent: str
    levels: tuple[str, ...]     # confident .. unsure


@dataclass(frozen=True)
class Run:
    text: str
    colour: str
    bold: bool = False
    dim: bool = False


def default_palette() -> Palette:
    theme = tomllib.loads(resources.files("themes").joinpath("dark.toml").read_text(encoding="utf-8"))
    variables = theme["variables"]
    low, high = _rgb(variables["canvas-low-entropy"]), _rgb(variables["canvas-high-entropy"])
    levels = tuple(_hex(low + (high - low) * level / (LEVELS - 1)) for level in range(LEVELS))
    return Palette(theme["background"], theme["foreground"], variables["canvas-noise"], theme["accent"], levels)


def _rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.float64)


def _hex(rgb) -> str:
    return "#" + "".join(f"{int(round(c)):02x}" for c in rgb)


def uncertainty(scores: np.ndarray, kind: str) -> np.ndarray:
    """0 (certain) .. LEVELS-1 (unsure), as the live canvas grades them (non-finite scores count as unsure)."""
    scores = np.nan_to_num(np.asarray(scores, np.float64), nan=np.inf if kind == "entropy" else 0.0)
    unsure = 1.0 - np.exp(-np.maximum(scores, 0.0)) if kind == "entropy" else 1.0 - np.clip(scores, 0.0, 1.0)
    return np.rint(unsure * (LEVELS - 1)).astype(np.int64)


def frame_lines(trajectory: Trajectory, index: int, palette: Palette, width: int) -> list[list[Run]]:
    """The header and the positions of frame `index`, wrapped at `width` cells, as runs of one style."""
    frame = trajectory.frames[index]
    blocks = len(trajectory.blocks) or None
    start = frame.prompt_positions
    settled = int(frame.accepted[start:].sum())
    header = (f"{block_position(frame.block, blocks, at_most=False)} · step {frame.step + 1}/{frame.max_steps} · "
              f"accepted {settled}/{len(frame.canvas) - start} (+{frame.newly_accepted})")
    lines: list[list[Run]] = [[Run(header, palette.muted)]]
    levels = uncertainty(frame.scores, frame.score_kind)
    line: list[Run] = []
    used = 0
    for position in range(start, len(frame.canvas)):
        run = _position(trajectory, frame, position, palette, int(levels[position]))
        cells = cell_len(run.text)
        if used + cells > width and line:
            lines.append(line)
            line, used = [], 0
        line.append(run)
        used += cells
    if line:
        lines.append(line)
    return [_merged(runs) for runs in lines]


def _position(trajectory: Trajectory, frame, position: int, palette: Palette, level: int) -> Run:
    def text_of(token: int) -> str:
        text = trajectory.token_text(token)
        return (unbroken(text) or EMPTY_GLYPH) if text is not None else EMPTY_GLYPH

    if frame.fixed is not None and frame.fixed[position]:
        return Run(text_of(frame.canvas[position]), palette.foreground, dim=True)
    if frame.edited is not None and frame.edited[position]:
        return Run(text_of(frame.canvas[position]), palette.accent, bold=True)
    if frame.accepted[position]:
        return Run(text_of(frame.canvas[position]), palette.levels[level], bold=True)
    return Run(text_of(frame.candidates[position]), palette.levels[level], dim=True)


def _merged(runs: list[Run]) -> list[Run]:
    merged: list[Run] = []
    for run in runs:
        if merged and (merged[-1].colour, merged[-1].bold, merged[-1].dim) == (run.colour, run.bold, run.dim):
            merged[-1] = Run(merged[-1].text + run.text, run.colour, run.bold, run.dim)
        else:
            merged.append(run)
    return merged


def timeline(trajectory: Trajectory, fps: float, hold_s: float = 1.0) -> list[float]:
    """Seconds each frame shows: 1/fps, a block's last step `hold_s`."""
    frames = trajectory.frames
    return [hold_s if i + 1 == len(frames) or frames[i + 1].block != f.block else 1.0 / fps
            for i, f in enumerate(frames)]


def write_svg(trajectory: Trajectory, path: Path, width: int = 80, fps: float = 8.0) -> None:
    palette = default_palette()
    frames = [frame_lines(trajectory, i, palette, width) for i in range(len(trajectory.frames))]
    durations = timeline(trajectory, fps)
    total = sum(durations)
    height = PAD * 2 + LINE_H * max((len(lines) for lines in frames), default=1)
    pixels = PAD * 2 + CELL_W * width
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{pixels:.0f}" height="{height}" '
           f'viewBox="0 0 {pixels:.0f} {height}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" '
           f'font-size="{FONT_PX}" xml:space="preserve">',
           f'<rect width="100%" height="100%" fill="{palette.background}"/>',
           # An invisible clock: every frame starts relative to its begin, and it restarts when it ends (a loop).
           f'<rect width="0" height="0"><animate id="clock" attributeName="width" from="0" to="0" '
           f'dur="{total:.3f}s" begin="0s;clock.end"/></rect>']
    start = 0.0
    for index, (lines, duration) in enumerate(zip(frames, durations)):
        if index + 1 < len(frames):
            out.append(f'<g visibility="hidden"><set attributeName="visibility" to="visible" '
                       f'begin="clock.begin+{start:.3f}s" dur="{duration:.3f}s"/>')
        else:
            # The last frame is visible by default, so a static viewer (image previews, rsvg-convert, most
            # converters ignore animation) shows the finished block; animated, it hides until its turn.
            hide = f'<set attributeName="visibility" to="hidden" begin="clock.begin" dur="{start:.3f}s"/>'
            out.append(f'<g visibility="visible">{hide if start > 0 else ""}')
        for row, runs in enumerate(lines):
            spans = "".join(_tspan(run) for run in runs)
            out.append(f'<text x="{PAD}" y="{PAD + LINE_H * (row + 1) - 4}">{spans}</text>')
        out.append("</g>")
        start += duration
    out.append("</svg>")
    path.write_text("\n".join(out), encoding="utf-8")


def _tspan(run: Run) -> str:
    style = f' fill="{run.colour}"' + (' font-weight="bold"' if run.bold else "") + \
        (' fill-opacity="0.55"' if run.dim else "")
    return f"<tspan{style}>{escape(run.text, quote=False)}</tspan>"


def write_gif(trajectory: Trajectory, path: Path, width: int = 80, fps: float = 8.0) -> None:
    from PIL import Image, ImageDraw, ImageFont

    palette = default_palette()
    try:
        font = ImageFont.truetype("DejaVuSansMono.ttf", FONT_PX)
    except OSError:
        font = ImageFont.load_default()
    cell = max(font.getlength("M"), 1.0)
    frames = [frame_lines(trajectory, i, palette, width) for i in range(len(trajectory.frames))]
    height = PAD * 2 + LINE_H * max((len(lines) for lines in frames), default=1)
    size = (int(PAD * 2 + cell * width), height)
    background = _rgb(palette.background)
    images = []
    for lines in frames:
        image = Image.new("RGB", size, palette.background)
        draw = ImageDraw.Draw(image)
        for row, runs in enumerate(lines):
            x = float(PAD)
            for run in runs:
                colour = _rgb(run.colour)
                if run.dim:  # as the terminal dims: towards the background
                    colour = background + (colour - background) * 0.55
                draw.text((x, PAD + LINE_H * row), run.text, font=font, fill=tuple(int(c) for c in colour))
                x += cell * cell_len(run.text)
        images.append(image)
    durations = [int(1000 * d) for d in timeline(trajectory, fps)]
    images[0].save(path, save_all=True, append_images=images[1:], duration=durations, loop=0, optimize=True)
