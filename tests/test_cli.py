"""The headless command line: output formats and one-line refusals (never a traceback)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tui.cli import main

from conftest import CHECKPOINTS, FIXTURES

DG = str(CHECKPOINTS / "dg_text")
LLADA = str(CHECKPOINTS / "llada2")
IMAGE = str(FIXTURES / "golden" / "dg_vision" / "image.png")


def generate(capsys, *args):
    code = main(["generate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_has_the_whole_result(capsys):
    code, out, _ = generate(capsys, "--model", DG, "--prompt", "Why is the sky blue?", "--max-tokens", "40",
                            "--max-denoising-steps", "4", "--json")
    assert code == 0
    result = json.loads(out)
    assert result["family"] == "diffusion_gemma"
    assert len(result["token_ids"]) == result["generated_tokens"] <= 40
    assert result["steps_per_block"] and all(s == 4 for s in result["steps_per_block"])
    assert result["finish_reason"] in ("stop", "length")
    assert set(result["timings"]) >= {"prefill_s", "ms_per_step", "tokens_per_s"}


def test_streamed_text_equals_json_content(capsys):
    args = ["--model", LLADA, "--prompt", "Why is the sky blue?", "--max-tokens", "40"]
    _, streamed, _ = generate(capsys, *args)
    _, out, _ = generate(capsys, *args, "--json")
    assert streamed.rstrip("\n") == json.loads(out)["content"]


def test_profile_reports_steps_and_speed(capsys):
    code, _, err = generate(capsys, "--model", DG, "--prompt", "hi", "--max-tokens", "8",
                            "--max-denoising-steps", "3", "--profile")
    assert code == 0
    assert "ms/step" in err and "tokens/s" in err and "peak memory" in err and "block 1: 3 steps" in err
    # Stop reasons in words, as the app says them (not the engine's `max_denoising_steps`).
    stops = [line.split("stop: ")[1] for line in err.splitlines() if "stop: " in line]
    assert stops and all("_" not in stop for stop in stops)


@pytest.mark.parametrize("args,words", [
    (["--model", "/no/such/folder", "--prompt", "hi"], "not found"),
    (["--model", DG, "--prompt", ""], "prompt is empty"),
    (["--model", DG, "--prompt", "hi", "--max-tokens", "0"], "--max-tokens must be a positive integer"),
    (["--model", DG, "--prompt", "hi", "--diffusion-sampler", "greedy"], "unknown sampler"),
    (["--model", DG, "--prompt", "hi", "--diffusion-threshold", "0"], "(0, 1]"),
    (["--model", DG, "--prompt", "hi", "--diffusion-threshold", "1.01"], "(0, 1]"),
    (["--model", LLADA, "--prompt", "hi", "--block-length", "0"], "--block-length must be a positive integer"),
    (["--model", LLADA, "--prompt", "hi", "--image", IMAGE], "cannot take images"),
    (["--model", DG, "--prompt", "hi", "--image", IMAGE], "cannot take images"),
    (["--prompt", "hi"], "--model is required"),
])
def test_bad_input_gets_one_clear_line(capsys, args, words):
    code, out, err = generate(capsys, *args)
    assert code != 0
    assert words in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_unknown_model_type_in_a_subprocess_has_no_traceback(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    result = subprocess.run([sys.executable, "-m", "tui.cli", "generate", "--model", str(tmp_path), "--prompt", "hi"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "unsupported model_type 'llama'" in result.stderr and "Traceback" not in result.stderr


def test_help_explains_both_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "diffusion-chat generate" in out and "--diffusion-sampler" in out and "--block-length" in out
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    assert "--json" in capsys.readouterr().out


@pytest.mark.parametrize("args", [["--max-tokens", "abc"], ["--temp", "hot"], ["--no-such-flag"], []])
def test_unparseable_flags_are_one_line_too(capsys, args):
    with pytest.raises(SystemExit) as exit_info:
        main(["generate", "--model", DG, *(["--prompt", "hi"] if args else []), *args])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.count("\n") == 1 and "error:" in err and "usage:" not in err


def test_the_app_takes_a_system_prompt_for_new_conversations(monkeypatch):
    import tui.app

    started = []
    monkeypatch.setattr(tui.app, "run_app", lambda options: started.append(options) or 0)
    assert main(["--model", DG, "--system", "Be brief.", "--temp", "0.5"]) == 0
    assert started[0].system_prompt == "Be brief." and started[0].settings.temp == 0.5
    assert main(["--model", DG]) == 0 and started[1].system_prompt is None
