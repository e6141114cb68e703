"""Input with no sane bound: JSON nested 30,000 deep (a 400 from `serve`, before the parser recurses) and a
numeric flag of any subcommand given nan, inf, 1e400 or a 40-digit number (argparse's one usage line)."""

from __future__ import annotations

import argparse
import json

import httpx
import pytest

from engine.io import bounded_json
from engine.cli.serve import serve_parser
from tui.cli import app_parser, main
from engine.cli.generate import generate_parser
from tui.replay_cli import replay_parser

from serve_helpers import QUICK, serving

PARSERS = {"app": app_parser, "serve": serve_parser, "generate": generate_parser, "replay": replay_parser}
REQUIRED = {"app": [], "serve": [], "generate": ["--prompt", "hi"], "replay": ["file.dctraj"]}


def test_depth_ignores_brackets_in_strings_and_refuses_deep_documents_before_parsing():
    assert bounded_json.depth('{"a": ["[[[", {"b": "\\"]]"}]}') == 3
    assert bounded_json.loads('{"a": [1, {"b": "[[["}]}') == {"a": [1, {"b": "[[["}]}
    for deep in ("[" * 50_000 + "]" * 50_000, '{"a":' * 50_000 + "1" + "}" * 50_000):
        with pytest.raises(bounded_json.JSONDepthError, match="50000 levels deep"):
            bounded_json.loads(deep)


@pytest.fixture(scope="module")
def server():
    with serving("dg_text") as running:
        yield running


@pytest.mark.parametrize("opening, closing", [("[", "]"), ('{"a":', "}")])
def test_serve_answers_a_body_nested_30000_deep_with_a_400_and_keeps_serving(server, opening, closing):
    deep = '{"messages": [{"role": "user", "content": "hi"}], "x": ' + opening * 30_000 + "1" + closing * 30_000 + "}"
    response = httpx.post(server.url + "/v1/chat/completions", content=deep,
                          headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_json" and "nested too deeply" in error["message"]
    assert "\n" not in error["message"] and "Recursion" not in error["message"]
    fine = httpx.post(server.url + "/v1/chat/completions", timeout=60,
                      json={"messages": [{"role": "user", "content": "hi"}], **QUICK})
    assert fine.status_code == 200


def numeric_flags():
    for command, make in PARSERS.items():
        for action in make()._actions:
            if getattr(action.type, "__name__", "") in ("int", "float") and action.option_strings:
                yield command, action.option_strings[-1]


@pytest.mark.parametrize("command, option", sorted(set(numeric_flags())))
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "9" * 40])
def test_every_numeric_flag_of_every_subcommand_refuses_non_finite_and_huge_values(capsys, command, option, value):
    with pytest.raises(SystemExit) as exited:
        PARSERS[command]().parse_args([*REQUIRED[command], f"{option}={value}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and len(lines) == 1 and f"argument {option}:" in lines[0], lines


@pytest.mark.parametrize("flag", ["--max-body-mb", "--max-image-mb"])
@pytest.mark.parametrize("value", ["nan", "inf", "0", "-3"])
def test_serve_limits_out_of_range_are_a_usage_line(capsys, flag, value):
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--model", "anything", f"{flag}={value}"])
    line = capsys.readouterr().err.strip()
    assert exited.value.code == 2 and line.startswith(f"diffusion-chat serve: error: argument {flag}: must be")


def test_the_flags_found_include_those_of_each_subcommand():
    found = set(numeric_flags())
    assert {("serve", "--max-body-mb"), ("serve", "--port"), ("replay", "--fps"), ("generate", "--temp"),
            ("app", "--seed")} <= found
    assert isinstance(serve_parser(), argparse.ArgumentParser) and json.dumps(sorted(found))
