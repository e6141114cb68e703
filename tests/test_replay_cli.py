"""The command line of the diffusion-native features: `generate --fill / --record / editing flags` and
`diffusion-chat replay` (a file or the conversation store; text, SVG and GIF), with one-line refusals."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree

import pytest
from PIL import Image

from engine.recording.trajectory import decode
from tui.cli import main
from tui.demo_models import DEMO_ROOT
from tui.replay_cli import from_store
from tui.replay_export import default_palette, frame_lines, timeline
from tui.store import ConversationStore
from tui.widgets.printable import flowing

from conftest import CHECKPOINTS

DG = str(CHECKPOINTS / "dg_text")
LLADA = str(CHECKPOINTS / "llada2")
SVG = "{http://www.w3.org/2000/svg}"


def cli(capsys, *args):
    try:
        code = main(list(args))
    except SystemExit as exited:   # argparse's own refusals (a flag's value)
        code = exited.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("traj") / "answer.traj"
    assert main(["generate", "--model", DG, "--fill", "The ___{5} sat on the [...]{4} mat.",
                 "--max-denoising-steps", "3", "--record", str(path)]) == 0
    return path


def test_fill_prints_the_filled_text_and_json_names_the_spans(capsys):
    code, out, _ = cli(capsys, "generate", "--model", DG, "--fill", r"Keep \___ this ___{4} text.",
                       "--max-denoising-steps", "2", "--json")
    result = json.loads(out)
    assert code == 0 and result["finish_reason"] == "stop"
    (start, end), = result["filled_spans"]
    content = result["content"]
    assert content[:start] == "Keep ___ this " and content[end:] == " text."
    code, streamed, _ = cli(capsys, "generate", "--model", DG, "--fill", r"Keep \___ this ___{4} text.",
                            "--max-denoising-steps", "2")
    assert code == 0 and streamed == content + "\n"


def test_editing_flags_come_from_the_schema(capsys):
    code, out, _ = cli(capsys, "generate", "--model", LLADA, "--prompt", "Hi", "--max-tokens", "8",
                       "--llada-mode", "quality", "--max-post-steps", "2", "--json")
    result = json.loads(out)
    assert code == 0 and len(result["edits_per_block"]) == len(result["steps_per_block"])
    assert all(steps <= 8 + 2 for steps in result["steps_per_block"])
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    out = capsys.readouterr().out
    assert "--editing-threshold" in out and "--max-post-steps" in out and "--llada-mode" in out and "--fill" in out


@pytest.mark.parametrize("args, message", [
    (["generate", "--model", DG, "--fill", "no holes"], "no hole"),
    (["generate", "--model", DG, "--fill", "a ___{0}"], "length 0"),
    (["generate", "--model", DG, "--fill", "a ___", "--think"], "thinking"),
    (["generate", "--model", LLADA, "--prompt", "x", "--editing-threshold", "2"], "--editing-threshold must be"),
    (["generate", "--model", LLADA, "--prompt", "x", "--llada-mode", "fast"], "unknown LLaDA mode 'fast'"),
])
def test_refusals_are_one_line(capsys, args, message):
    with pytest.raises(SystemExit):   # argparse's own refusal, as one line too
        main(["generate", "--model", DG])
    assert "--prompt (or --fill)" in capsys.readouterr().err
    code, out, err = cli(capsys, *args)
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1


def test_replay_prints_every_step_and_each_block(capsys, recording):
    trajectory = decode(recording.read_bytes())
    code, out, _ = cli(capsys, "replay", str(recording))
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("dg_text (diffusion_gemma)")
    step_lines = [line for line in lines if re.match(r"b\d+ s", line)]
    assert len(step_lines) == len(trajectory.frames)
    assert step_lines[0].startswith("b1 s 1/3") and "░" in step_lines[0] and "sat on the" in step_lines[0]
    assert lines[-2].startswith("finished: stop") and lines[-1] == flowing(trajectory.meta["content"])
    code, out, _ = cli(capsys, "replay", str(recording), "--blocks")
    assert [line for line in out.splitlines() if line.startswith("block ")] and not \
        [line for line in out.splitlines() if line.startswith("b1 s")]


def test_svg_export_animates_every_step_in_the_default_theme(capsys, tmp_path, recording):
    target = tmp_path / "canvas.svg"
    code, _, err = cli(capsys, "replay", str(recording), "--export", str(target))
    assert code == 0 and "wrote" in err
    root = ElementTree.parse(target).getroot()
    frames = [g for g in root.iter(f"{SVG}g") if g.find(f"{SVG}set") is not None]
    assert len(frames) == len(decode(recording.read_bytes()).frames)
    text = target.read_text()
    assert "#111418" in text and 'repeatCount' not in text and "clock.end" in text   # dark theme; loops
    assert "sat on the" in text


def test_svg_export_shows_the_last_frame_in_a_static_viewer(capsys, tmp_path, recording):
    """Viewers that ignore animation draw only what is visible by default: that must be the last frame (the
    finished block), and the others must stay hidden there."""
    target = tmp_path / "canvas.svg"
    assert cli(capsys, "replay", str(recording), "--export", str(target))[0] == 0
    root = ElementTree.parse(target).getroot()
    groups = [g for g in root.iter(f"{SVG}g")]
    static = [g for g in groups if g.get("visibility") != "hidden"]
    assert len(static) == 1 and static[0] is groups[-1]
    shown = ["".join(text.itertext()) for text in static[0].iter(f"{SVG}text")]
    trajectory = decode(recording.read_bytes())
    last = ["".join(run.text for run in line)
            for line in frame_lines(trajectory, len(trajectory.frames) - 1, default_palette(), 80)]
    assert shown == last and "mat." in "".join(shown)
    # Animated, it hides until its own turn: from the loop's start for as long as the frames before it show.
    hide = static[0].find(f"{SVG}set")
    assert hide.get("to") == "hidden" and hide.get("begin") == "clock.begin"
    assert abs(float(hide.get("dur").rstrip("s")) - sum(timeline(trajectory, 8.0)[:-1])) < 1e-3
    if shutil.which("rsvg-convert"):   # a static renderer draws a non-blank picture
        png = tmp_path / "canvas.png"
        subprocess.run(["rsvg-convert", str(target), "-o", str(png)], check=True)
        with Image.open(png) as image:
            assert len(set(image.convert("RGB").getdata())) > 2


def test_gif_export_has_one_frame_per_step(capsys, tmp_path, recording):
    target = tmp_path / "canvas.gif"
    assert cli(capsys, "replay", str(recording), "--export", str(target), "--width", "40")[0] == 0
    with Image.open(target) as image:
        assert image.n_frames == len(decode(recording.read_bytes()).frames)


def test_replay_refusals(capsys, tmp_path, recording, monkeypatch):
    monkeypatch.setenv("DIFFUSION_CHAT_DATA_DIR", str(tmp_path / "nowhere"))
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"junk")
    for args, message in (
        ([str(junk)], "not a diffusion-chat trajectory"),
        ([str(recording), "--export", str(tmp_path / "x.png")], "writes .svg or .gif"),
        ([str(recording), "--message", "1"], "not of a file"),
        (["7"], "no conversation store"),
        ([str(recording), "--fps", "0"], "--fps"),
    ):
        code, _, err = cli(capsys, "replay", *args)
        assert code != 0 and message in err and len(err.strip().splitlines()) == 1, (args, err)


def test_replay_a_conversation_from_the_store(capsys, tmp_path, recording, monkeypatch):
    monkeypatch.setenv("DIFFUSION_CHAT_DATA_DIR", str(tmp_path))
    from tui.store import default_db_path

    with ConversationStore(default_db_path()) as store:
        conversation = store.create("Sky talk", "dg_text")
        store.add_message(conversation.id, "user", "Why?")
        first = store.add_message(conversation.id, "assistant", "Because.")
        store.add_message(conversation.id, "user", "And?")
        second = store.add_message(conversation.id, "assistant", "Nothing recorded.")
        revision = store.revisions(first.id)[0]
        assert store.save_trajectory(revision.id, recording.read_bytes())
        # the last answer with a recording, by id or title; --message picks one
        for args in ([str(conversation.id)], ["Sky talk"], [str(conversation.id), "--message", "1"]):
            code, out, _ = cli(capsys, "replay", *args, "--blocks")
            assert code == 0 and out.splitlines()[-1] == flowing(decode(recording.read_bytes()).meta["content"])
        code, _, err = cli(capsys, "replay", str(conversation.id), "--message", "2")
        assert code != 0 and "no recorded trajectory for answer 2" in err
        code, _, err = cli(capsys, "replay", str(conversation.id), "--message", "3")
        assert code != 0 and "has 2 answer(s)" in err
        code, _, err = cli(capsys, "replay", "No such talk")
        assert code != 0 and "no conversation or file named 'No such talk'" in err
        assert from_store(str(conversation.id), None, 1, store=store) == recording.read_bytes()
        assert second.revision == 1


def test_the_bundled_llada2_demo_edits_a_slip_and_replay_counts_one_edit(tmp_path, capsys):
    """The LLaDA-2 demo edits as LLaDA-2.1 does (its generation_config's editing_threshold): with editing off it
    answers this prompt "You're welcome! I'm enly a tiny LLaDA-2 demo model.", with editing on one position is
    re-written to "only" (bench/README.md, "Twenty-first pass"; the demo bundled before the twenty-third pass slipped
    on "book me a table for 2 at an italian place tonight" instead). The replay and the status bar said "1 edits"."""
    path = tmp_path / "edit.traj"
    prompt = "merci beaucoup"
    code, out, _ = cli(capsys, "generate", "--model", str(DEMO_ROOT / "llada2-demo"), "--prompt", prompt,
                       "--record", str(path))
    assert code == 0 and out.startswith("You're welcome! I'm only a tiny LLaDA-2 demo model")
    code, off, _ = cli(capsys, "generate", "--model", str(DEMO_ROOT / "llada2-demo"), "--prompt", prompt,
                       "--no-token-editing")
    assert code == 0 and off.startswith("You're welcome! I'm enly a tiny LLaDA-2")
    code, out, _ = cli(capsys, "replay", str(path), "--blocks")
    assert code == 0 and ", 1 edit: " in out and "1 edits" not in out
