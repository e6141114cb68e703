"""The conversation store: CRUD, ordering, search, export, restart and refusal to touch broken files.

Branches, revisions and trajectories are in test_store_tree.py, the schema ladder in test_store_schema.py."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from store_helpers import FakeClock, assert_refused_untouched
from tui import store as store_module
from tui.store import ConversationStore, NotFoundError, StoreError, default_db_path, schema


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "conversations.sqlite3"


@pytest.fixture
def store(db_path: Path):
    with ConversationStore(db_path, clock=FakeClock()) as opened:
        yield opened


def test_default_path_honours_the_environment_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("DIFFUSION_CHAT_DATA_DIR", str(tmp_path / "elsewhere"))
    assert default_db_path() == tmp_path / "elsewhere" / "conversations.sqlite3"
    monkeypatch.delenv("DIFFUSION_CHAT_DATA_DIR")
    assert default_db_path().parent.name == "diffusion-chat"


def test_create_get_rename_delete(store: ConversationStore):
    created = store.create("First  chat\n", "google/diffusion-gemma", think=True, system_prompt="Be brief.")
    assert created.title == "First chat"  # titles are kept to one line
    assert (created.model, created.think, created.system_prompt, created.messages) == (
        "google/diffusion-gemma", True, "Be brief.", ()
    )
    assert store.get(created.id) == created

    store.rename(created.id, "Renamed")
    renamed = store.get(created.id)
    assert renamed.title == "Renamed"
    assert renamed.updated_at > created.updated_at

    store.delete(created.id)
    with pytest.raises(NotFoundError):
        store.get(created.id)
    assert store.list() == []
    with pytest.raises(NotFoundError):
        store.rename(created.id, "gone")
    with pytest.raises(NotFoundError):
        store.add_message(created.id, "user", "hi")


def test_list_is_newest_first_with_message_counts(store: ConversationStore):
    older = store.create("older", "m")
    newer = store.create("newer", "m")
    assert [summary.title for summary in store.list()] == ["newer", "older"]

    store.add_message(older.id, "user", "hello")
    store.add_message(older.id, "assistant", "hi there")
    summaries = store.list()
    assert [summary.title for summary in summaries] == ["older", "newer"]  # a new message bumps it to the top
    assert [summary.message_count for summary in summaries] == [2, 0]
    assert summaries[0].updated_at > summaries[1].updated_at
    assert summaries[1].id == newer.id


def test_messages_keep_order_and_fields(store: ConversationStore):
    conversation = store.create("chat", "m")
    first = store.add_message(conversation.id, "user", "Describe these", images=["cat.png", "dog.jpg"])
    second = store.add_message(
        conversation.id, "assistant", "A cat and a dog.", reasoning="Look at both.",
        stats={"tokens_per_second": 41.5, "steps": 12},
    )
    third = store.add_message(conversation.id, "user", "And now?")
    fourth = store.add_message(conversation.id, "assistant", "Partial", status="cancelled")

    messages = store.get(conversation.id).messages
    assert [message.id for message in messages] == [first.id, second.id, third.id, fourth.id]
    assert [message.role for message in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[0].images == ("cat.png", "dog.jpg")
    assert messages[1].reasoning == "Look at both."
    assert messages[1].stats == {"tokens_per_second": 41.5, "steps": 12}
    assert messages[2].stats is None and messages[2].status == "complete"
    assert messages[3].status == "cancelled"


def test_a_new_revision_replaces_the_answer_everywhere(store: ConversationStore):
    conversation = store.create("chat", "m")
    store.add_message(conversation.id, "user", "question")
    reply = store.add_message(conversation.id, "assistant", "draft", status="cancelled")
    store.add_revision(reply.id, "answer", reasoning="why", status="complete", stats={"steps": 3})
    updated = store.get_message(reply.id)
    assert (updated.content, updated.reasoning, updated.status, updated.stats) == ("answer", "why", "complete", {"steps": 3})
    assert store.get(conversation.id).messages[-1] == updated
    assert store.search("answer")[0].message_id == reply.id  # the index follows the shown revision
    assert store.search("draft") == []

    store.set_current_revision(reply.id, 1)
    assert [message.content for message in store.get(conversation.id).messages] == ["question", "draft"]
    assert store.search("answer") == []
    assert store.search("draft")[0].message_id == reply.id
    with pytest.raises(NotFoundError):
        store.add_revision(reply.id + 100, "x")
    with pytest.raises(NotFoundError):
        store.set_current_revision(reply.id, 3)


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"role": "robot"}, ValueError),
        ({"status": "done"}, ValueError),
        ({"stats": {"value": object()}}, ValueError),
        ({"stats": {"value": float("nan")}}, ValueError),
        ({"role": "assistant", "settings": {"temp": object()}}, ValueError),
        ({"settings": {"temp": 0.5}}, ValueError),  # only answers record sampler settings
        ({"parent_id": 12345}, NotFoundError),
    ],
)
def test_invalid_messages_are_rejected_without_writing(store: ConversationStore, arguments, error):
    conversation = store.create("chat", "m")
    call = {"role": "user", **arguments}
    with pytest.raises(error):
        store.add_message(conversation.id, content="x", **call)
    assert store.get(conversation.id).messages == ()
    assert store.list()[0].message_count == 0


def test_per_conversation_thinking_and_system_prompt(store: ConversationStore):
    conversation = store.create("chat", "m")
    assert (conversation.think, conversation.system_prompt) == (False, None)
    store.set_think(conversation.id, True)
    store.set_system_prompt(conversation.id, "You are terse.\nAnswer in French.")
    reloaded = store.get(conversation.id)
    assert reloaded.think is True and reloaded.system_prompt == "You are terse.\nAnswer in French."
    assert reloaded.updated_at > conversation.updated_at
    for blank in (None, "", "  \n"):
        store.set_system_prompt(conversation.id, "x")
        store.set_system_prompt(conversation.id, blank)  # None or blank text removes it
        assert store.get(conversation.id).system_prompt is None
    with pytest.raises(ValueError):
        store.set_think(conversation.id, "yes")
    with pytest.raises(ValueError):
        store.create("bad", "m", think="yes")
    with pytest.raises(NotFoundError):
        store.set_think(conversation.id + 1, True)
    with pytest.raises(NotFoundError):
        store.set_system_prompt(conversation.id + 1, "x")


def _fill_for_search(store: ConversationStore) -> dict[str, int]:
    cooking = store.create("Cooking ideas", "m")
    store.add_message(cooking.id, "user", "How do I make a crème brûlée?")
    store.add_message(cooking.id, "assistant", "Caramelise the sugar with a torch until it crackles.")
    travel = store.create("Trip to Lisbon", "m")
    store.add_message(travel.id, "user", 'Where can I eat "pastéis de nata" and drink coffee?')
    return {"cooking": cooking.id, "travel": travel.id}


def test_search_finds_words_in_messages_and_titles(store: ConversationStore):
    ids = _fill_for_search(store)
    assert store.full_text_search  # this SQLite has FTS5; the fallback has its own test

    hits = store.search("sugar torch")
    assert [(hit.conversation_id, hit.role) for hit in hits] == [(ids["cooking"], "assistant")]
    assert "sugar" in hits[0].snippet

    title_hits = [hit for hit in store.search("lisbon") if hit.message_id is None]
    assert [hit.conversation_title for hit in title_hits] == ["Trip to Lisbon"]

    assert {hit.conversation_id for hit in store.search("creme")} == {ids["cooking"]}  # accents are folded
    assert {hit.conversation_id for hit in store.search("caramel")} == {ids["cooking"]}  # word prefixes match
    assert store.search("sugar lisbon") == []  # every word must appear in the same message or title


@pytest.mark.parametrize(
    "query",
    [
        '"', '"pastéis', "*", "coffee*", "a AND", "OR", "NEAR(x y)", "title:foo", "(", "-", "^coffee", "%", "_",
        "'; DROP TABLE messages; --", "",
    ],
)
def test_search_survives_odd_input(store: ConversationStore, query: str):
    _fill_for_search(store)
    hits = store.search(query)
    assert isinstance(hits, list)
    assert len(store.list()) == 2


def test_search_treats_quotes_and_stars_as_text(store: ConversationStore):
    ids = _fill_for_search(store)
    assert [hit.conversation_id for hit in store.search('"pastéis de')] == [ids["travel"]]
    assert [hit.conversation_id for hit in store.search("coffee*")] == [ids["travel"]]
    assert store.search("*") == []


def test_search_is_newest_first_and_limited(store: ConversationStore):
    conversation = store.create("chat", "m")
    for index in range(5):
        store.add_message(conversation.id, "user", f"note number {index}")
    hits = store.search("note", limit=3)
    assert [hit.snippet for hit in hits] == ["note number 4", "note number 3", "note number 2"]


def test_like_fallback_when_fts5_is_missing_and_index_built_later(monkeypatch, db_path: Path):
    monkeypatch.setattr(schema, "fts5_available", lambda connection: False)
    with ConversationStore(db_path) as fallback:
        assert not fallback.full_text_search
        ids = _fill_for_search(fallback)
        assert [hit.role for hit in fallback.search("sugar torch")] == ["assistant"]
        assert [hit.message_id for hit in fallback.search("lisbon")] == [None]
        assert [hit.conversation_id for hit in fallback.search('"pastéis')] == [ids["travel"]]
        for odd in ['"', "*", "%", "_", "\\", "(", "100%"]:
            assert fallback.search(odd) == []
    monkeypatch.undo()
    # Reopened where FTS5 exists: the index is built from the messages already saved.
    with ConversationStore(db_path) as indexed:
        assert indexed.full_text_search
        assert [hit.role for hit in indexed.search("sugar torch")] == ["assistant"]


def test_full_text_index_stays_consistent(store: ConversationStore):
    ids = _fill_for_search(store)
    store.rename(ids["travel"], "Porto weekend")
    store.delete(ids["cooking"])
    assert store.search("brûlée") == [] and store.search("lisbon") == []
    assert [hit.conversation_title for hit in store.search("porto")] == ["Porto weekend"]
    connection = store._connection
    connection.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
    connection.execute("INSERT INTO conversations_fts(conversations_fts) VALUES ('integrity-check')")


def test_export_markdown(store: ConversationStore):
    conversation = store.create("Pictures", "inclusionAI/LLaDA2.0-mini", think=True)
    store.add_message(conversation.id, "user", "What is in this picture?", images=["beach.png"])
    store.add_message(conversation.id, "assistant", "A sunny beach.", reasoning="Sand, sea and sky.",
                      settings={"temp": 0.2})
    store.add_message(conversation.id, "user", "Longer please")
    store.add_message(conversation.id, "assistant", "A long", status="cancelled")

    markdown = store.export_markdown(conversation.id)
    lines = markdown.splitlines()
    assert lines[0] == "# Pictures"
    assert "- Model: `inclusionAI/LLaDA2.0-mini`" in lines
    # Per answer (the conversation's switch is on now, but only the first answer was made thinking).
    assert "- Thinking: in 1 of 2 answers" in lines
    assert "*Revision 1 of 1 · thinking on · settings: temp=0.2*" in lines  # what the answer was made with
    assert "*thinking off*" in lines
    assert [line for line in lines if line.startswith("## ")] == ["## User", "## Assistant", "## User", "## Assistant"]
    assert "Images: `beach.png`" in lines
    details = markdown.index("<details>")
    assert markdown.index("<summary>Reasoning</summary>") > details
    assert details < markdown.index("Sand, sea and sky.") < markdown.index("</details>") < markdown.index("A sunny beach.")
    assert markdown.index("What is in this picture?") < markdown.index("A sunny beach.") < markdown.index("Longer please")
    assert lines[-3:] == ["*(cancelled)*", "", "*thinking off*"]


def test_export_shows_per_block_numbers_readably(store: ConversationStore):
    conversation = store.create("Numbers", "m")
    store.add_message(conversation.id, "user", "Count.")
    store.add_message(conversation.id, "assistant", "1 2 3", stats={
        "accepted_per_step": [[32, 32], [16, 8, 8]], "steps_per_block": [2, 3], "finish_reason": "stop",
        "think": False}, settings={"diffusion_sampler": "stable_and_confident"})
    markdown = store.export_markdown(conversation.id)
    assert "[[" not in markdown and "accepted_per_step" not in markdown
    line = next(line for line in markdown.splitlines() if "accepted per step" in line)
    assert "accepted per step b1 32 32 · b2 16 8 8" in line and "steps per block 2 3" in line
    assert "diffusion_sampler=stable and confident" in line and "thinking off" in line


def test_export_says_thinking_from_the_saved_flag_else_from_the_reasoning(store: ConversationStore):
    conversation = store.create("Flags", "m")
    for content, reasoning, stats in (("a", "", {"think": True}),          # asked to think, none came
                                      ("b", "because", {"think": False}),  # the flag wins over the reasoning
                                      ("c", "because", {"steps": 2}),      # a record from before the flag
                                      ("d", "", None)):
        store.add_message(conversation.id, "user", "q")
        store.add_message(conversation.id, "assistant", content, reasoning=reasoning, stats=stats)
    answers = store.export_markdown(conversation.id).split("## Assistant")[1:]
    assert ["thinking on" in a for a in answers] == [True, False, True, False]
    assert ["thinking off" in a for a in answers] == [False, True, False, True]


def test_data_survives_a_restart(db_path: Path):
    with ConversationStore(db_path) as first:
        conversation = first.create("persisted", "m", think=True, system_prompt="Be kind.")
        first.add_message(conversation.id, "user", "remember me")
        reply = first.add_message(conversation.id, "assistant", "I will", stats={"steps": 2}, settings={"seed": 7})
        revision = first.add_revision(reply.id, "I promise", settings={"seed": 8})
        assert first.save_trajectory(revision.id, b"\x00frames")
        before = first.get(conversation.id)
        revisions = first.revisions(reply.id)
    with ConversationStore(db_path) as second:
        assert second.get(conversation.id) == before
        assert second.revisions(reply.id) == revisions
        assert second.load_trajectory(revision.id) == b"\x00frames"
        assert [hit.conversation_id for hit in second.search("remember")] == [conversation.id]
    connection = sqlite3.connect(db_path)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == store_module.SCHEMA_VERSION
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    connection.close()


def test_failed_write_rolls_back(store: ConversationStore):
    conversation = store.create("chat", "m")
    store._connection.execute(
        "CREATE TEMP TRIGGER fail_touch BEFORE UPDATE ON conversations BEGIN SELECT RAISE(ABORT, 'boom'); END"
    )
    with pytest.raises(StoreError, match="boom"):
        store.add_message(conversation.id, "user", "lost")  # the insert happens, then touching the row fails
    store._connection.execute("DROP TRIGGER temp.fail_touch")
    assert store.get(conversation.id).messages == ()
    assert store.search("lost") == []


def test_corrupt_file_raises_store_error_and_is_left_alone(tmp_path: Path):
    path = tmp_path / "conversations.sqlite3"
    path.write_bytes(b"this is not a database, just some text that someone cares about\n" * 100)
    assert_refused_untouched(path, "not a database")


def test_damaged_database_raises_store_error(db_path: Path):
    with ConversationStore(db_path) as store:
        store.create("chat", "m")
    raw = bytearray(db_path.read_bytes())
    raw[100:4096] = b"\xff" * (4096 - 100)  # wipe the schema page after the header
    db_path.write_bytes(bytes(raw))
    for extra in db_path.parent.glob("*-wal"):
        extra.unlink()
    assert_refused_untouched(db_path, "malformed")


def test_other_programs_and_newer_databases_are_refused(tmp_path: Path):
    foreign = tmp_path / "foreign.sqlite3"
    connection = sqlite3.connect(foreign)
    connection.execute("CREATE TABLE notes (text TEXT)")
    connection.commit()
    connection.close()
    assert_refused_untouched(foreign, "not a diffusion-chat")

    newer = tmp_path / "newer" / "conversations.sqlite3"
    ConversationStore(newer).close()
    connection = sqlite3.connect(newer)
    connection.execute("PRAGMA user_version = 99")
    connection.commit()
    connection.close()
    assert_refused_untouched(newer, "newer diffusion-chat")


def test_the_store_is_for_the_thread_that_opened_it(store: ConversationStore):
    conversation = store.create("chat", "m")
    errors: list[BaseException] = []
    worker = threading.Thread(target=lambda: _capture(errors, lambda: store.add_message(conversation.id, "user", "x")))
    worker.start()
    worker.join()
    assert len(errors) == 1 and isinstance(errors[0], StoreError) and "thread" in str(errors[0])
    assert store.get(conversation.id).messages == ()


def _capture(errors: list[BaseException], call) -> None:
    try:
        call()
    except BaseException as error:  # noqa: BLE001 - handed to the test thread
        errors.append(error)
