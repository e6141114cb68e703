"""Text that is not text, and chat templates that misbehave: each is named as what it is, in one line (no
`unexpected UnicodeEncodeError` / `unexpected SecurityError`)."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import engine
from conftest import CHECKPOINTS
from engine.errors import CheckpointError, InputError
from tui.cli import main

ROOT = Path(__file__).resolve().parent.parent
MODEL = str(CHECKPOINTS / "dg_text")


def run_with_stdin(monkeypatch, capsys, data: bytes) -> tuple[int, str]:
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(data)))
    code = main(["generate", "--model", MODEL, "--prompt", "-", "--max-tokens", "4"])
    return code, capsys.readouterr().err.strip()


def test_invalid_utf8_on_stdin_names_the_byte(monkeypatch, capsys):
    code, error = run_with_stdin(monkeypatch, capsys, b"hello \xff world")
    assert code == 1 and error == ("diffusion-chat: error: stdin is not valid UTF-8 text: at byte 6, byte 0xFF: "
                                   "invalid start byte; convert it to UTF-8 first")
    code, error = run_with_stdin(monkeypatch, capsys, "été".encode("utf-8")[:-1])
    assert code == 1 and "at byte 3, byte 0xC3: unexpected end of data" in error


def test_a_utf8_encoded_lone_surrogate_on_stdin_is_named_as_such(monkeypatch, capsys):
    code, error = run_with_stdin(monkeypatch, capsys, b"ab\xed\xa0\x80cd")
    assert code == 1 and "at byte 2, a UTF-8-encoded lone surrogate (U+D800..U+DFFF), which UTF-8 forbids" in error


def test_valid_utf8_on_stdin_is_read(monkeypatch, capsys):
    code, _ = run_with_stdin(monkeypatch, capsys, "Grüße, 世界 🌍".encode("utf-8"))
    assert code == 0


def test_the_real_stdin_of_the_command(tmp_path):
    result = subprocess.run([sys.executable, "-m", "tui.cli", "generate", "--model", MODEL, "--prompt", "-"],
                            input=b"bad \x80 byte", capture_output=True, cwd=ROOT, timeout=60)
    assert result.returncode == 1
    assert result.stderr.decode().strip() == ("diffusion-chat: error: stdin is not valid UTF-8 text: at byte 4, "
                                              "byte 0x80: invalid start byte; convert it to UTF-8 first")


def test_a_lone_surrogate_in_a_message_is_refused_by_the_engine(capsys):
    # What Python makes of invalid UTF-8 in a command-line argument (surrogateescape).
    code = main(["generate", "--model", MODEL, "--prompt", "hi \udcff there", "--max-tokens", "4"])
    assert code == 1 and capsys.readouterr().err.strip() == (
        "diffusion-chat: error: the user message is not valid Unicode text: a lone surrogate U+DCFF at character 3 "
        "(undecodable bytes, such as invalid UTF-8, become one)")
    model = engine.load(MODEL)
    with pytest.raises(InputError, match="the system message is not valid Unicode text"):
        engine.generate(model, messages=[{"role": "system", "content": "\ud800"}, {"role": "user", "content": "hi"}])
    with pytest.raises(InputError, match=r"lone surrogate U\+DFFF at character 0"):
        engine.generate(model, messages=[{"role": "user", "content": [{"type": "text", "text": "\udfff"}]}])


def checkpoint_with_template(tmp_path, template: str) -> Path:
    folder = tmp_path / "templated"
    shutil.copytree(CHECKPOINTS / "dg_text", folder)
    (folder / "chat_template.jinja").write_text(template)
    return folder


def test_a_template_breaking_out_of_the_sandbox_is_stopped_and_named(tmp_path, capsys):
    folder = checkpoint_with_template(tmp_path, "{{ ''.__class__.__mro__[1].__subclasses__() }}")
    with pytest.raises(CheckpointError, match=r"^the checkpoint's chat template tried something unsafe and was "
                                              r"stopped: access to attribute '__class__' of 'str' object is unsafe"):
        engine.generate(engine.load(folder), messages=[{"role": "user", "content": "hi"}])
    assert main(["generate", "--model", str(folder), "--prompt", "hi"]) == 1
    error = capsys.readouterr().err.strip()
    assert "tried something unsafe and was stopped" in error and "unexpected" not in error


def test_a_template_that_fails_is_the_checkpoint_s_error(tmp_path):
    model = engine.load(checkpoint_with_template(tmp_path, "{{ messages[0]['content'] + 1 }}"))
    with pytest.raises(CheckpointError, match=r"^the checkpoint's chat template failed: TypeError: "):
        engine.generate(model, messages=[{"role": "user", "content": "hi"}])


def test_a_template_s_own_raise_exception_still_speaks_about_the_input(tmp_path):
    model = engine.load(checkpoint_with_template(tmp_path, "{{ raise_exception('System role not supported') }}"))
    with pytest.raises(InputError, match="chat template: System role not supported"):
        engine.generate(model, messages=[{"role": "user", "content": "hi"}])
