"""The trainer's options that take a share of the composed small-talk turns (--thanks-share: how many are thanks;
--intent-labels: how many are asked for their intent's name; --bare-share: how many built phrases are the intent's
words alone): checked as shares, and handed to the batches."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")   # the trainer imports it

from demo_trainer_helpers import check_share_option, handed_to_batches  # noqa: E402

OPTIONS = [("--thanks-share", "thanks_share", 0.45), ("--intent-labels", "intent_labels", 0.3),
           ("--bare-share", "bare_share", 0.4)]


@pytest.mark.parametrize(("option", "attribute", "value"), OPTIONS)
def test_the_option_is_a_share_of_composed_turns(option, attribute, value, capsys):
    check_share_option(option, attribute, capsys)


@pytest.mark.parametrize(("option", "attribute", "value"), OPTIONS)
def test_the_trainer_hands_the_share_to_its_batches(option, attribute, value, tmp_path, monkeypatch):
    extra = ("--composed-chat", "0.8", option, str(value))
    assert handed_to_batches(tmp_path, monkeypatch, attribute, *extra) == {value}
