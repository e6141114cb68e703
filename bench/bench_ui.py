"""What the chat app costs the engine (not a test). Prints one JSON object.

1. Denoising throughput: the same generation run headless (an engine worker nobody watches) and in the
   app (canvas polled at 30 Hz and redrawn within the chat screen's CPU budget, every frame rendered to
   terminal escape codes), alternated `--reps` times after a warm-up each; reports ms per denoising step,
   `slowdown_percent` (target: under 2 %) and the UI thread's CPU time per step.
2. Keystroke-to-screen latency while denoising: keys typed into the prompt during a generation; the
   time from posting the key until the terminal output that shows it is written (target: under 50 ms).
3. A long paste into the prompt (`--paste-kb`, 200 by default): the time until it is on screen, and the
   latency of the next key typed after it.

The app runs in-process on a driver that renders exactly as in a terminal but discards the bytes, with
throwaway data/config folders. By default the checkpoint is a random DiffusionGemma written to a temp
folder, sized so one denoising step takes tens of milliseconds on a laptop CPU; `--model` uses another.

Usage: python bench/bench_ui.py [--model PATH] [--steps 48] [--blocks 2] [--reps 3] [--keys 20] [--paste-kb 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import queue
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual import events  # noqa: E402
from textual.drivers.headless_driver import HeadlessDriver  # noqa: E402

import engine  # noqa: E402

engine.prepare_process()  # first: it loads OpenBLAS before MLX on Linux
from engine.events import Finished  # noqa: E402
from engine.events import (  # noqa: E402
    GenerationFailed, GenerationRequest, GenerationUpdate, LoadFailed, ModelLoaded,
)
from engine.thread.worker import EngineWorker  # noqa: E402

MESSAGES = [{"role": "user", "content": "Tell me about block diffusion."}]
KEY = "x"

# Between the tiny test fixture and bench/random_checkpoint.py's MID_SIZE.
SMALL_SIZE = dict(hidden_size=256, num_hidden_layers=4, num_experts=8, top_k_experts=2, vocab_size=4096,
                  num_attention_heads=4, num_key_value_heads=2, num_global_key_value_heads=1, head_dim=64,
                  global_head_dim=64, intermediate_size=512, moe_intermediate_size=128, sliding_window=256)


class RecordingDriver(HeadlessDriver):
    """Renders like a terminal (the app is not 'headless') and timestamps each write instead of printing."""

    writes: list[tuple[float, str]] = []

    @property
    def is_headless(self) -> bool:
        return False

    def write(self, data: str) -> None:
        RecordingDriver.writes.append((time.perf_counter(), data))


def fixed_steps_settings(steps: int, tokens: int) -> engine.Settings:
    # Every block runs exactly `steps` steps: no early stop, a full canvas.
    return engine.Settings(max_tokens=tokens, max_denoising_steps=steps, diffusion_full_canvas=True,
                           stability_threshold=0, confidence_threshold=1e-9)


class Headless:
    """The engine thread with nobody drawing: the baseline."""

    def __init__(self, model_path: str):
        self.events: queue.Queue = queue.Queue()
        self.worker = EngineWorker(self.events.put).start()
        self.worker.load_model(model_path)
        self.info = self._next(ModelLoaded).info

    def _next(self, kind):
        while True:
            event = self.events.get(timeout=3600)
            if isinstance(event, (LoadFailed, GenerationFailed)):
                raise RuntimeError(event.message)
            if isinstance(event, kind):
                return event

    async def run(self, settings: engine.Settings):
        self.worker.generate(GenerationRequest(tuple(MESSAGES), settings))
        while True:
            while self.events.empty():
                await asyncio.sleep(0.005)  # let the (idle) app's loop breathe meanwhile
            event = self._next(GenerationUpdate)
            if isinstance(event.event, Finished):
                return event.event.stats


async def app_generation(app, settings: engine.Settings, type_keys: int = 0) -> tuple:
    """One answer in the app; optionally type keys while it denoises.

    Returns (stats, key latencies in ms, CPU seconds the UI thread spent while the answer was written)."""
    chat, session = app.chat, app.session
    await session.open(None)  # a fresh conversation: the same prompt as headless, no history
    finished = []
    handle = session.handle

    async def record(event):
        if isinstance(getattr(event, "event", None), Finished):
            finished.append(event.event.stats)
        await handle(event)

    session.handle = record
    try:
        app.remember_settings(app.model_info.family, settings)
        chat.prompt.focus()
        ui_cpu_start = time.thread_time()  # this coroutine runs on the app's (UI) thread
        # (Pilot's own key presses wait for the app to be idle, which it is not while an answer is written.)
        await chat.send(MESSAGES[0]["content"])
        latencies = []
        while session.generation is not None and session.generation.last_frame is None:
            await asyncio.sleep(0.005)
        prompt_lines = _prompt_lines(chat.prompt)
        chat.prompt.cursor_blink = False  # a blinking cursor would redraw that line by itself
        for _ in range(type_keys):
            if session.generation is None:
                break
            await asyncio.sleep(0.05)
            RecordingDriver.writes.clear()
            typed = len(chat.prompt.value)
            sent = time.perf_counter()
            app.post_message(events.Key(KEY, KEY))  # as the terminal driver delivers a key
            shown = await _written(prompt_lines, sent, "the typed key")
            assert len(chat.prompt.value) == typed + 1
            latencies.append((shown - sent) * 1000)
        while not finished:
            await asyncio.sleep(0.005)
        ui_cpu = time.thread_time() - ui_cpu_start
    finally:
        del session.handle  # back to the session's own method
    chat.prompt.value = ""
    return finished[0], latencies, ui_cpu


def _prompt_lines(prompt) -> tuple[str, ...]:
    """The cursor moves of terminal writes that redraw the prompt (any of its lines)."""
    region = prompt.content_region
    return tuple(f"\x1b[{y + 1};" for y in range(region.y, region.bottom))


async def _written(lines: tuple[str, ...], since: float, what: str) -> float:
    """When a terminal write after `since` first redrew one of `lines`."""
    while True:
        shown = next((t for t, data in RecordingDriver.writes if t >= since and any(line in data for line in lines)),
                     None)
        if shown is not None:
            return shown
        if time.perf_counter() - since > 30:
            raise RuntimeError(f"{what} never reached the screen")
        await asyncio.sleep(0.0005)


async def paste_timing(app, kilobytes: int) -> dict:
    """A long paste into the idle prompt: until it is drawn, then the next key's latency."""
    prompt = app.chat.prompt
    line = "word " * 40 + "\n"
    text = line * max(kilobytes * 1024 // len(line), 1)
    prompt.focus()
    prompt.value = ""
    prompt.cursor_blink = False
    await asyncio.sleep(0.2)
    RecordingDriver.writes.clear()
    sent = time.perf_counter()
    app.post_message(events.Paste(text))  # as the terminal driver delivers a paste
    while len(prompt.value) != len(text):
        await asyncio.sleep(0.0005)
    landed = time.perf_counter()
    shown = await _written(_prompt_lines(prompt), landed, "the paste")
    await asyncio.sleep(0.2)
    RecordingDriver.writes.clear()
    typed = time.perf_counter()
    app.post_message(events.Key(KEY, KEY))
    key_shown = await _written(_prompt_lines(prompt), typed, "the key after the paste")
    assert prompt.value.endswith(KEY)
    prompt.value = ""
    return {"kilobytes": round(len(text) / 1024, 1), "shown_ms": round((shown - sent) * 1000, 1),
            "next_key_ms": round((key_shown - typed) * 1000, 2)}


def ms_per_step(stats) -> float:
    return 1000 * stats.denoise_s / sum(stats.steps_per_block)


async def measure(model_path: str, steps: int, blocks: int, reps: int, keys: int, paste_kb: int) -> dict:
    from tui.app import AppOptions, DiffusionChatApp

    headless = Headless(model_path)
    defaults = headless.info.setting_defaults
    canvas = defaults.get("diffusion_max_canvas_length") or defaults.get("block_length", 32)
    settings = fixed_steps_settings(steps, canvas * blocks)
    app = DiffusionChatApp(AppOptions(model=model_path))
    app.driver_class = RecordingDriver
    async with app.run_test(headless=False, size=(120, 40)):
        while app.model_info is None:
            await asyncio.sleep(0.01)
        await headless.run(settings)                      # warm-ups
        await app_generation(app, settings)
        headless_ms, app_ms, ui_cpu_ms = [], [], []
        for _ in range(reps):
            headless_ms.append(ms_per_step(await headless.run(settings)))
            stats, _, ui_cpu = await app_generation(app, settings)
            app_ms.append(ms_per_step(stats))
            ui_cpu_ms.append(1000 * ui_cpu / sum(stats.steps_per_block))
        latencies = []
        for _ in range(10):  # an answer can end early (EOS): type on through further ones
            stats, typed, _ = await app_generation(app, settings, keys - len(latencies))
            latencies += typed
            if len(latencies) >= keys:
                break
        paste = await paste_timing(app, paste_kb)
    headless.worker.close()
    headless_median, app_median = statistics.median(headless_ms), statistics.median(app_ms)
    return {
        "model": model_path,
        "canvas_length": canvas,
        "steps_per_block": steps,
        "blocks": blocks,
        "headless_ms_per_step": [round(v, 2) for v in headless_ms],
        "app_ms_per_step": [round(v, 2) for v in app_ms],
        "slowdown_percent": round(100 * (app_median / headless_median - 1), 2),
        "slowdown_target_percent": 2,
        # What the app itself costs, less noisy than the slowdown on a shared machine: CPU time of the UI
        # thread per denoising step (frames, status line, and the answer's start, block commits and end).
        "app_ui_cpu_ms_per_step": [round(v, 2) for v in ui_cpu_ms],
        "key_latency_ms": {
            "count": len(latencies),
            "median": round(statistics.median(latencies), 2) if latencies else None,
            "max": round(max(latencies), 2) if latencies else None,
            "target": 50,
        },
        "latency_run_ms_per_step": round(ms_per_step(stats), 2),
        "paste": paste,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="checkpoint folder (default: a random small DiffusionGemma in a temp folder)")
    parser.add_argument("--steps", type=int, default=48, help="denoising steps per block (DiffusionGemma's default)")
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3, help="alternating headless/app runs")
    parser.add_argument("--keys", type=int, default=20, help="keys typed during the latency run")
    parser.add_argument("--paste-kb", type=int, default=200, help="size of the text pasted into the prompt")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as state:
        os.environ["DIFFUSION_CHAT_DATA_DIR"] = str(Path(state) / "data")
        os.environ["DIFFUSION_CHAT_CONFIG_DIR"] = str(Path(state) / "config")
        model = args.model
        if model is None:
            from random_checkpoint import write_random_dg_checkpoint

            model = str(write_random_dg_checkpoint(Path(state) / "model", canvas_length=64, **SMALL_SIZE))
        result = asyncio.run(measure(model, args.steps, args.blocks, args.reps, args.keys, args.paste_kb))
        if args.model is None:
            result["model"] = "random small DiffusionGemma (hidden 256, 4 layers, 8 experts, vocab 4096, canvas 64)"
    import mlx.core as mx

    print(json.dumps({"benchmark": "ui", "device": str(mx.default_device()), "machine": platform.machine(),
                      "cpu_count": os.cpu_count(), "results": result}, indent=2))


if __name__ == "__main__":
    main()
