"""The trainer's batch feed (scripts/demo/feed.py) stops its worker processes cleanly with chunks still queued.

`Pool.terminate()` with results pending raced CPython's result-handler thread: under load (a CI run on two
cores) it raised "Cannot have cache with result_hander not alive" from the trainer's last line and left the
workers running. Three feeds stopped in a row, each with chunks queued ahead of the one being read, must all
stop without an error and leave no worker behind. The race itself needs load to show; what tells the two
stops apart every time is that the queued chunks are finished rather than abandoned."""

from __future__ import annotations

import multiprocessing

import pytest

torch = pytest.importorskip("torch")

from scripts.demo.feed import Feed, FeedSpec  # noqa: E402
from scripts.demo.tokenizers import special_ids, write_tokenizer  # noqa: E402


def test_a_feed_with_chunks_queued_stops_cleanly_and_leaves_no_worker(tmp_path):
    write_tokenizer(tmp_path, "llada2_moe")
    spec = FeedSpec("llada2_moe", str(tmp_path), 0, 48, 1024, 0.0, 512, "", 32, 362, special_ids("llada2_moe"),
                    0.5, 0.2)
    in_process = Feed(spec, 0).next()
    for _ in range(3):
        feed = Feed(spec, 2)
        first = feed.next()   # the workers now hold the chunks queued ahead
        queued = list(feed.pending)
        assert queued
        feed.close()
        assert feed.pool is None
        assert all(result.ready() and result.successful() for result in queued)   # finished, not abandoned
        assert torch.equal(first.batch.noisy, in_process.batch.noisy)   # the same stream as made in-process
    assert not [child for child in multiprocessing.active_children() if "SpawnPoolWorker" in child.name]
