"""Thinking with a model that has no thinking channel is refused out loud, not accepted silently: the engine
reads the capability off the chat template, and the chat says so when thinking is turned on."""

from __future__ import annotations

import dataclasses

import engine
from engine.serve.wire import decode_model, encode_model
from tests.session_helpers import MODEL, parts  # noqa: F401  (fixture)
from tui.demo_models import DEMO_ROOT


def test_the_demos_say_whether_their_template_has_a_thinking_channel():
    assert engine.load(str(DEMO_ROOT / "diffusion-gemma-demo")).info().thinking is True
    info = engine.load(str(DEMO_ROOT / "llada2-demo")).info()
    assert info.thinking is False
    assert decode_model("x", encode_model(info, [])).thinking is False   # a remote client learns it too


def test_turning_thinking_on_with_a_model_without_a_channel_says_so(parts):  # noqa: F811
    session, _, view, *_ = parts
    session.set_model(dataclasses.replace(MODEL, name="llada2-demo", family="llada2_moe", thinking=False))
    session.toggle_thinking()
    message, severity = view.named("notify")[-1]
    assert "llada2-demo has no thinking channel" in message and severity == "warning"
    session.toggle_thinking()
    assert view.named("notify")[-1] == ("Thinking off for this conversation (from the next turn).",)


def test_a_model_with_a_channel_just_turns_thinking_on(parts):  # noqa: F811
    session, _, view, *_ = parts
    session.toggle_thinking()
    assert view.named("notify")[-1] == ("Thinking on for this conversation (from the next turn).",)
