"""A program that loads and generates on a thread (the engine's one-thread rule) and then exits returns 0, every
time: the thread's MLX state is released on that thread (engine/thread/release.py explains the abort this prevents),
both for Python API users and for `EngineWorker`, closed or not."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINT = ROOT / "tests" / "fixtures" / "checkpoints" / "dg_text"
RUNS = 20

SCRIPTS = {
    # The Python API on a thread of the program's own; the model even outlives the thread.
    "api-thread": """
        import threading
        import engine

        kept = []

        def work():
            model = engine.load(CHECKPOINT)
            settings = engine.Settings(max_tokens=4, max_denoising_steps=2)
            for _ in engine.generate(model, prompt_ids=[2, 3, 4], settings=settings):
                pass
            kept.append(model)

        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    """,
    # A daemon thread still generating when the program ends: the interpreter exits mid-generation.
    "daemon-mid-generation": """
        import threading
        import engine
        from engine.events import Step

        generating = threading.Event()

        def work():
            model = engine.load(CHECKPOINT)
            settings = engine.Settings(max_tokens=4000, max_denoising_steps=48)
            for event in engine.generate(model, prompt_ids=[2, 3, 4], settings=settings):
                if isinstance(event, Step):
                    generating.set()

        threading.Thread(target=work, daemon=True).start()
        assert generating.wait(60)
    """,
    # The engine thread, closed by the program or left to the interpreter's exit.
    "worker": """
        import sys, threading
        import engine
        from engine.events import Finished, GenerationRequest, GenerationUpdate, ModelLoaded
        from engine.thread.worker import EngineWorker

        ready = threading.Event()

        def notify(event):
            if isinstance(event, ModelLoaded) or (isinstance(event, GenerationUpdate)
                                                  and isinstance(event.event, Finished)):
                ready.set()

        worker = EngineWorker(notify).start()
        worker.load_model(CHECKPOINT)
        assert ready.wait(30)
        ready.clear()
        settings = engine.Settings(max_tokens=4, max_denoising_steps=2)
        worker.generate(GenerationRequest(({"role": "user", "content": "hi"},), settings))
        assert ready.wait(30)
        if CLOSE:
            worker.close()
    """,
}


def run(name: str, close: bool) -> subprocess.CompletedProcess:
    code = f"CHECKPOINT = {str(CHECKPOINT)!r}\nCLOSE = {close}\n" + textwrap.dedent(SCRIPTS[name])
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name, close", [("api-thread", False), ("worker", True), ("worker", False)])
def test_loading_and_generating_on_a_thread_then_exiting_returns_0_every_time(name, close):
    # Two at a time: the abort was a race with the interpreter's shutdown, lost in about 3 runs of 4.
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: run(name, close), range(RUNS)))
    failures = [(r.returncode, r.stderr.strip()[-300:]) for r in results if r.returncode != 0]
    assert not failures, f"{len(failures)} of {RUNS} runs failed: {failures[:3]}"


def test_a_daemon_thread_generating_when_the_program_exits_ends_cleanly_every_time():
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: run("daemon-mid-generation", False), range(5)))
    failures = [(r.returncode, r.stderr.strip()[-300:]) for r in results if r.returncode != 0]
    assert not failures, f"{len(failures)} of 5 runs failed: {failures[:3]}"
    assert not any("terminate called" in r.stderr for r in results)


def test_the_worker_thread_releases_its_mlx_state_before_it_ends(monkeypatch):
    """close() joins the engine thread, and the release ran on that thread (not on the caller's)."""
    import engine.thread.release
    from engine.thread.worker import EngineWorker

    released_on = []
    monkeypatch.setattr(engine.thread.release, "_release_thread_state",
                        lambda: released_on.append(threading.current_thread().name))
    worker = EngineWorker(lambda event: None, load=lambda *a, **k: None, generate=lambda *a, **k: iter(())).start()
    worker.close()
    assert not worker._thread.is_alive()
    assert released_on == ["diffusion-chat-engine"]
