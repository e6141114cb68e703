"""The engine thread (engine/thread/worker.py): ordering, the newest-frame slot, cancellation, errors, isolation."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.errors import CheckpointError, InputError
from engine.events import BlockCommitted, Finished, Started, Stats, Step
from engine.events import (
    GenerationFailed,
    ModelInfo,
    GenerationRequest,
    GenerationUpdate,
    LoadFailed,
    LoadProgress,
    ModelLoaded,
)
from engine.thread.worker import EngineWorker

CHECKPOINTS = Path(__file__).parent / "fixtures" / "checkpoints"
REPO = Path(__file__).parent.parent
TIMEOUT_S = 20


def test_engine_and_worker_never_import_textual():
    code = "import sys, engine, engine.thread.worker; assert 'textual' not in sys.modules, 'textual was imported'"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


# ---- a stand-in engine: same signatures as engine.load / engine.generate ------------------------------


class FakeModel:
    name = "fake"

    def info(self) -> ModelInfo:
        return ModelInfo(name="fake", family="diffusion_gemma", label="Fake", supports_images=False,
                         setting_defaults={})


def fake_step(block: int, step: int, length: int = 4) -> Step:
    accepted = np.arange(length) <= step
    return Step(block=block, step=step, max_steps=8, canvas=np.arange(length, dtype=np.int32),
                candidates=np.arange(length, dtype=np.int32), accepted=accepted, newly_accepted=1,
                scores=np.zeros(length, np.float32), score_kind="entropy", temperature=None, noise_is_mask=False)


def fake_stats() -> Stats:
    return Stats(steps_per_block=(2,), prompt_tokens=3, generated_tokens=2, work_tokens=8, prefill_s=0.0,
                 denoise_s=0.0, total_s=0.01, peak_memory_bytes=0)


def committed(block: int, text: str) -> BlockCommitted:
    return BlockCommitted(block=block, token_ids=(1, 2), committed=(1, 2, 3, 4), content_delta=text,
                          reasoning_delta="", steps=2, stop_reason="max_denoising_steps")


class Recorder:
    """Collects worker events; `wait(kind)` blocks until one of that type arrives."""

    def __init__(self):
        self.events: queue.Queue = queue.Queue()
        self.seen: list = []
        self.threads: set[int] = set()

    def __call__(self, event) -> None:
        self.threads.add(threading.get_ident())
        self.events.put(event)

    def wait(self, kind, timeout: float = TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while True:
            event = self.events.get(timeout=max(deadline - time.monotonic(), 0.001))
            self.seen.append(event)
            if isinstance(event, kind):
                return event

    def wait_finished(self) -> GenerationUpdate:
        """The next generation's `Finished` update (the updates before it land in `seen`)."""
        while not isinstance((update := self.wait(GenerationUpdate)).event, Finished):
            pass
        return update


@pytest.fixture
def make_worker():
    workers = []

    def make(notify, **kwargs):
        worker = EngineWorker(notify, **kwargs).start()
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        worker.close()
        assert not worker._thread.is_alive()


def test_load_and_generate_run_on_one_thread_and_only_rare_events_are_notified(make_worker):
    threads = {}

    def load(ref, progress=None, cancel=None):
        threads["load"] = threading.get_ident()
        progress(10, 10, "weights")
        return FakeModel()

    def generate(model, messages, settings, think, cancel, session, progress=None):
        threads["generate"] = threading.get_ident()
        assert isinstance(model, FakeModel) and messages == [{"role": "user", "content": "hi"}]
        yield Started(prompt_tokens=3, encoded_tokens=3, prefill_s=0.0, block_length=4)
        for step in range(3):
            yield fake_step(0, step)
        yield committed(0, "Hello")
        yield Finished("stop", (1, 2), "Hello", "", fake_stats())

    recorder = Recorder()
    worker = make_worker(recorder, load=load, generate=generate)
    load_job = worker.load_model("some/model")
    progress = recorder.wait(LoadProgress)
    loaded = recorder.wait(ModelLoaded)
    assert (progress.job, progress.done_bytes, progress.total_bytes) == (load_job, 10, 10)
    assert loaded.job == load_job and loaded.info == FakeModel().info()

    job = worker.generate(GenerationRequest([{"role": "user", "content": "hi"}], engine.Settings()))
    recorder.wait_finished()
    kinds = [type(e.event).__name__ for e in recorder.seen if isinstance(e, GenerationUpdate)]
    assert kinds == ["Started", "BlockCommitted", "Finished"]  # steps never go through notify
    assert all(e.job == job for e in recorder.seen if isinstance(e, GenerationUpdate))
    # The slot holds the newest step only.
    assert worker.latest_frame.job == job and worker.latest_frame.step.step == 2
    assert threads["load"] == threads["generate"] != threading.get_ident()


def test_cancel_stops_a_generation_and_the_thread_keeps_serving(make_worker):
    steps_after_cancel = []

    def generate(model, messages, settings, think, cancel, session, progress=None):
        yield Started(prompt_tokens=1, encoded_tokens=1, prefill_s=0.0, block_length=4)
        step = 0
        while not cancel.is_set():
            yield fake_step(0, step % 8)
            step += 1
            time.sleep(0.002)
        steps_after_cancel.append(step)
        yield Finished("cancelled", (), "", "", fake_stats())

    recorder = Recorder()
    worker = make_worker(recorder, load=lambda ref, progress, cancel: FakeModel(), generate=generate)
    worker.load_model("x")
    recorder.wait(ModelLoaded)
    job = worker.generate(GenerationRequest([{"role": "user", "content": "hi"}], engine.Settings()))
    deadline = time.monotonic() + TIMEOUT_S
    while worker.latest_frame is None or worker.latest_frame.job != job:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    worker.cancel(job)
    finished = recorder.wait_finished()
    assert finished.event.finish_reason == "cancelled" and steps_after_cancel
    # A new job gets a fresh cancel flag.
    second = worker.generate(GenerationRequest([{"role": "user", "content": "again"}], engine.Settings()))
    time.sleep(0.05)
    worker.cancel(second)
    assert recorder.wait_finished().job == second


@pytest.mark.parametrize(
    "error, expected",
    [
        (InputError("the prompt is empty"), "the prompt is empty"),
        (RuntimeError("boom\nwith a second line"), "RuntimeError: boom"),
    ],
)
def test_generation_errors_become_one_line_and_the_thread_survives(make_worker, error, expected):
    calls = []

    def generate(model, messages, settings, think, cancel, session, progress=None):
        calls.append(messages)
        if len(calls) == 1:
            raise error
        yield Finished("stop", (), "ok", "", fake_stats())

    recorder = Recorder()
    worker = make_worker(recorder, load=lambda ref, progress, cancel: FakeModel(), generate=generate)
    worker.load_model("x")
    recorder.wait(ModelLoaded)
    failing = worker.generate(GenerationRequest([{"role": "user", "content": "1"}], engine.Settings()))
    failed = recorder.wait(GenerationFailed)
    assert (failed.job, failed.message) == (failing, expected)
    worker.generate(GenerationRequest([{"role": "user", "content": "2"}], engine.Settings()))
    assert recorder.wait(GenerationUpdate).event.content == "ok"


def test_generating_without_a_model_is_refused(make_worker):
    recorder = Recorder()
    worker = make_worker(recorder, load=lambda *a, **k: FakeModel(), generate=lambda *a, **k: iter(()))
    worker.generate(GenerationRequest([{"role": "user", "content": "hi"}], engine.Settings()))
    assert recorder.wait(GenerationFailed).message == "no model is loaded"


def test_loading_cancels_a_running_generation_and_can_itself_be_cancelled(make_worker):
    release = threading.Event()

    def load(ref, progress=None, cancel=None):
        if ref == "slow":
            # A download: chunks until cancelled.
            for chunk in range(1, 10_000):
                if cancel.is_set():
                    raise CheckpointError(f"download of {ref} cancelled")
                progress(chunk, 10_000, "model.safetensors")
                time.sleep(0.001)
        return FakeModel()

    def generate(model, messages, settings, think, cancel, session, progress=None):
        release.set()
        while not cancel.is_set():
            yield fake_step(0, 0)
            time.sleep(0.002)
        yield Finished("cancelled", (), "", "", fake_stats())

    recorder = Recorder()
    worker = make_worker(recorder, load=load, generate=generate)
    worker.load_model("fast")
    recorder.wait(ModelLoaded)
    worker.generate(GenerationRequest([{"role": "user", "content": "hi"}], engine.Settings()))
    assert release.wait(TIMEOUT_S)
    slow = worker.load_model("slow")
    assert recorder.wait(GenerationUpdate).event.finish_reason == "cancelled"
    first_progress = recorder.wait(LoadProgress)
    assert first_progress.job == slow
    worker.cancel(slow)
    failed = recorder.wait(LoadFailed)
    assert failed.cancelled and failed.job == slow
    # Progress is throttled: far fewer reports than chunks.
    reports = [e for e in recorder.seen if isinstance(e, LoadProgress)]
    assert len(reports) < 50


def test_the_real_engine_on_the_tiny_checkpoint():
    recorder = Recorder()
    worker = EngineWorker(recorder).start()
    try:
        worker.load_model(str(CHECKPOINTS / "dg_text"))
        info = recorder.wait(ModelLoaded).info
        assert info.family == "diffusion_gemma" and info.token_text(2) == "<bos>"
        settings = engine.Settings(max_tokens=32, max_denoising_steps=4)
        job = worker.generate(GenerationRequest(({"role": "user", "content": "hi"},), settings, conversation=1))
        updates = []
        while not updates or not isinstance(updates[-1].event, Finished):
            updates.append(recorder.wait(GenerationUpdate))
        assert isinstance(updates[0].event, Started)
        assert isinstance(worker.latest_frame.step, Step) and worker.latest_frame.job == job
        assert worker.latest_frame.step.max_steps == 4
        content = "".join(u.event.content_delta for u in updates if isinstance(u.event, BlockCommitted))
        assert content + updates[-1].event.content_tail == updates[-1].event.content
    finally:
        worker.close()


def test_cancel_stops_only_the_job_it_names(make_worker):
    def generate(model, messages, settings, think, cancel, session, progress=None):
        for step in range(40):
            if cancel.is_set():
                yield Finished("cancelled", (), "", "", fake_stats())
                return
            yield fake_step(0, step % 8)
            time.sleep(0.002)
        yield Finished("stop", (), messages[0]["content"], "", fake_stats())

    recorder = Recorder()
    worker = make_worker(recorder, load=lambda ref, progress, cancel: FakeModel(), generate=generate)
    worker.load_model("x")
    recorder.wait(ModelLoaded)
    first = worker.generate(GenerationRequest(({"role": "user", "content": "first"},), engine.Settings()))
    second = worker.generate(GenerationRequest(({"role": "user", "content": "second"},), engine.Settings()))
    worker.cancel(second)  # still queued: it never runs, and the running one is untouched
    done = recorder.wait_finished()
    assert (done.job, done.event.finish_reason) == (first, "stop")
    skipped = recorder.wait_finished()
    assert (skipped.job, skipped.event.finish_reason) == (second, "cancelled")


def test_the_worker_owns_prefix_caches_per_conversation_and_forgets_them(make_worker):
    sessions = []

    def generate(model, messages, settings, think, cancel, session, progress=None):
        sessions.append(session)
        yield Finished("stop", (), "", "", fake_stats())

    recorder = Recorder()
    worker = make_worker(recorder, load=lambda ref, progress, cancel: FakeModel(), generate=generate)
    worker.load_model("x")
    recorder.wait(ModelLoaded)
    for conversation in ("a", "b", "a", None):
        worker.generate(GenerationRequest(({"role": "user", "content": "hi"},), engine.Settings(),
                                          conversation=conversation))
        recorder.wait_finished()
    assert sessions[0] is sessions[2] is not sessions[1] and sessions[3] is None
    worker.forget("a")
    worker.generate(GenerationRequest(({"role": "user", "content": "hi"},), engine.Settings(), conversation="a"))
    recorder.wait_finished()
    assert sessions[4] is not sessions[0]
    worker.load_model("y")  # a new model: no cache survives
    recorder.wait(ModelLoaded)
    worker.generate(GenerationRequest(({"role": "user", "content": "hi"},), engine.Settings(), conversation="b"))
    recorder.wait_finished()
    assert sessions[5] is not sessions[1]


def test_a_failed_load_keeps_the_model_that_works(make_worker):
    def load(ref, progress=None, cancel=None):
        if ref == "missing":
            raise CheckpointError("model folder not found: missing")
        return FakeModel()

    def generate(model, messages, settings, think, cancel, session, progress=None):
        assert isinstance(model, FakeModel)
        yield Finished("stop", (1,), "still here", "", fake_stats())

    recorder = Recorder()
    worker = make_worker(recorder, load=load, generate=generate)
    worker.load_model("good")
    recorder.wait(ModelLoaded)
    worker.load_model("missing")
    failed = recorder.wait(LoadFailed)
    assert failed.message == "model folder not found: missing" and not failed.cancelled
    worker.generate(GenerationRequest([{"role": "user", "content": "hi"}], engine.Settings()))
    assert recorder.wait_finished().event.content == "still here"
