"""`diffusion-chat serve` from the command line: the bar (the official client streams the text `generate`
prints, same seed and settings), one-line refusals, and the app's --server flags."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest

from tui.cli import app_parser, main

from conftest import CHECKPOINTS

REPO = Path(__file__).parent.parent
DG = str(CHECKPOINTS / "dg_text")
FLAGS = ["--max-tokens", "60", "--max-denoising-steps", "6", "--seed", "7", "--temp", "0.8"]


@pytest.fixture
def serve_process():
    """`diffusion-chat serve` as a user starts it (any free port), with a server-side default on top."""
    process = subprocess.Popen([sys.executable, "-m", "tui.cli", "serve", "--model", DG, "--port", "0",
                                "--api-key", "k", "--entropy-bound", "0.2"], cwd=REPO, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 120
    url = None
    while url is None and time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line and process.poll() is not None:
            break
        found = re.search(r"serving dg_text \(DiffusionGemma\) on (http://127\.0\.0\.1:\d+/v1)", line)
        url = found.group(1) if found else None
    try:
        assert url, "the server did not start"
        yield url
    finally:
        process.terminate()
        process.wait(20)


def test_the_openai_client_streams_what_generate_prints(serve_process, capsys):
    api = openai.OpenAI(base_url=serve_process, api_key="k", max_retries=0)
    stream = api.chat.completions.create(model="dg_text", messages=[{"role": "user", "content": "Why is the sky blue?"}],
                                         stream=True, max_tokens=60, seed=7, temperature=0.8,
                                         extra_body={"max_denoising_steps": 6})
    served = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert main(["generate", "--model", DG, "--prompt", "Why is the sky blue?", *FLAGS, "--entropy-bound", "0.2"]) == 0
    printed = capsys.readouterr().out
    assert served and printed == served + ("" if served.endswith("\n") else "\n")


@pytest.mark.parametrize("args, message", [
    ([], "--model is required"),
    (["--model", DG, "--temp", "-1"], "--temp must be >= 0, got -1.0"),
    (["--model", DG, "--port", "70000"], "argument --port: must be an integer in 0..65535, not '70000'"),
    (["--model", DG, "--max-queue", "0"], "argument --max-queue: must be an integer in 1..1048576, not '0'"),
    (["--model", DG, "--max-batch", "0"], "argument --max-batch: must be an integer in 1..64, not '0'"),
    (["--model", DG, "--bogus"], "unrecognized arguments: --bogus"),
    (["--model", str(CHECKPOINTS / "nowhere"), "--port", "0"], "not found"),
])
def test_bad_serve_flags_are_one_line(capsys, args, message):
    try:
        code = main(["serve", *args])
    except SystemExit as exit:   # argparse's own refusals
        code = exit.code
    lines = capsys.readouterr().err.strip().splitlines()
    # One line says what is wrong (a "loading …" progress line may come before it).
    assert code != 0 and message in lines[-1] and "Traceback" not in "".join(lines), lines
    assert [line for line in lines if "error" in line] == lines[-1:]


def test_a_taken_port_is_one_line(capsys):
    from engine.serve.run import bind

    taken = bind("127.0.0.1", 0)
    try:
        assert main(["serve", "--model", DG, "--port", str(taken.getsockname()[1])]) == 1
    finally:
        taken.close()
    assert "cannot listen on 127.0.0.1:" in capsys.readouterr().err


def test_the_app_takes_a_server_and_its_key():
    args = app_parser().parse_args(["--server", "http://gpu-box:8000", "--api-key", "k", "--model", "m"])
    assert (args.server, args.api_key, args.model) == ("http://gpu-box:8000", "k", "m")


def test_serve_help_says_left_out_flags_take_the_checkpoint_defaults_not_saved_settings(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the saved setting" not in text
    assert "left out = the checkpoint's generation_config (serve does not read the app's config.toml)" in text
    # What serve really does: a fresh seed per request, and batches (the help said "one at a time", "default 0").
    assert "default: a new seed per request" in text and "(default 0)" not in text.split("--seed N", 1)[1][:80]
    assert "one at a time" not in text and "denoised together in one batched forward pass" in text
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "left out = the saved setting" in " ".join(capsys.readouterr().out.split())  # the app does read them


def test_serve_does_not_read_the_apps_saved_settings(tmp_path, monkeypatch):
    """What the help says is what happens: a config.toml with sampler settings changes nothing served."""
    from engine.cli.serve import run_serve
    import engine.serve.run as run

    (tmp_path / "config.toml").write_text("[samplers.diffusion_gemma]\ntemp = 0.25\nmax_denoising_steps = 3\n")
    monkeypatch.setenv("DIFFUSION_CHAT_CONFIG_DIR", str(tmp_path))
    seen = {}
    monkeypatch.setattr(run, "serve", lambda model, host, port, options, **rest: seen.update(options=options))
    assert run_serve(["--model", DG, "--seed", "3"]) == 0
    assert seen["options"].defaults.to_dict() == {"seed": 3}
