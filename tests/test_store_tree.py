"""Schema 2 in use: branches (edit and resend), revisions (regenerate), recorded trajectories, and the
Markdown export of all three."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from store_helpers import FakeClock
from tui.store import ConversationStore, NotFoundError, schema


@pytest.fixture
def store(tmp_path: Path):
    with ConversationStore(tmp_path / "conversations.sqlite3", clock=FakeClock(), trajectory_cap=100) as opened:
        yield opened


def _contents(store: ConversationStore, conversation_id: int) -> list[str]:
    return [message.content for message in store.get(conversation_id).messages]


# -- branches ---------------------------------------------------------------------------------------


def test_messages_chain_onto_the_current_leaf(store: ConversationStore):
    conversation = store.create("chat", "m")
    first = store.add_message(conversation.id, "user", "q1")
    answer = store.add_message(conversation.id, "assistant", "a1")
    second = store.add_message(conversation.id, "user", "q2")
    assert (first.parent_id, answer.parent_id, second.parent_id) == (None, first.id, answer.id)
    assert (first.revision, answer.revision) == (None, 1)
    assert store.siblings(answer.id) == [answer]


def test_edit_and_resend_makes_a_branch_and_keeps_the_old_one(store: ConversationStore):
    conversation = store.create("chat", "m")
    store.add_message(conversation.id, "user", "q1")
    store.add_message(conversation.id, "assistant", "a1")
    original = store.add_message(conversation.id, "user", "q2")
    store.add_message(conversation.id, "assistant", "a2")

    edited = store.add_message(conversation.id, "user", "q2 edited", parent_id=original.parent_id)
    assert _contents(store, conversation.id) == ["q1", "a1", "q2 edited"]
    store.add_message(conversation.id, "assistant", "a2 for the edit")
    assert _contents(store, conversation.id) == ["q1", "a1", "q2 edited", "a2 for the edit"]
    assert [m.id for m in store.siblings(original.id)] == [original.id, edited.id]  # creation order
    assert store.siblings(edited.id) == store.siblings(original.id)
    assert store.list()[0].message_count == 4  # the current path, not every message

    # Switching to the old sibling shows its continuation again; switching back, the edit's.
    switched = store.switch_branch(original.id)
    assert [m.content for m in switched.messages] == ["q1", "a1", "q2", "a2"]
    assert _contents(store, conversation.id) == ["q1", "a1", "q2", "a2"]
    assert [m.content for m in store.switch_branch(edited.id).messages][-1] == "a2 for the edit"


def test_editing_the_first_message_makes_a_second_root(store: ConversationStore):
    conversation = store.create("chat", "m")
    root = store.add_message(conversation.id, "user", "hello")
    store.add_message(conversation.id, "assistant", "hi")
    other_root = store.add_message(conversation.id, "user", "good morning", parent_id=None)
    assert other_root.parent_id is None
    assert _contents(store, conversation.id) == ["good morning"]
    assert [m.id for m in store.siblings(root.id)] == [root.id, other_root.id]
    assert _contents(store, store.switch_branch(root.id).id) == ["hello", "hi"]
    unrelated = store.create("other", "m")
    store.add_message(unrelated.id, "user", "not a sibling")
    assert len(store.siblings(root.id)) == 2  # roots of other conversations are not alternatives


def test_switching_goes_to_the_newest_leaf_under_the_chosen_message(store: ConversationStore):
    conversation = store.create("chat", "m")
    question = store.add_message(conversation.id, "user", "q")
    older = store.add_message(conversation.id, "assistant", "older answer")
    store.add_message(conversation.id, "user", "follow-up")
    store.set_current_leaf(conversation.id, question.id)
    newer = store.add_message(conversation.id, "assistant", "newer answer")  # follows the chosen leaf
    assert newer.parent_id == question.id
    assert [m.id for m in store.siblings(older.id)] == [older.id, newer.id]

    assert _contents(store, store.switch_branch(older.id).id) == ["q", "older answer", "follow-up"]
    assert _contents(store, store.switch_branch(question.id).id) == ["q", "newer answer"]  # newest leaf below
    store.set_current_leaf(conversation.id, older.id)
    assert _contents(store, conversation.id) == ["q", "older answer"]  # a path may end above a leaf


def test_branch_calls_check_their_ids(store: ConversationStore):
    conversation = store.create("chat", "m")
    mine = store.add_message(conversation.id, "user", "mine")
    other = store.create("other", "m")
    theirs = store.add_message(other.id, "user", "theirs")
    with pytest.raises(NotFoundError):
        store.set_current_leaf(conversation.id, theirs.id)
    with pytest.raises(NotFoundError):
        store.set_current_leaf(conversation.id + 100, mine.id)
    with pytest.raises(ValueError):
        store.add_message(conversation.id, "user", "x", parent_id=theirs.id)
    for call in (store.siblings, store.switch_branch, store.get_message, store.revisions):
        with pytest.raises(NotFoundError):
            call(theirs.id + 100)
    assert _contents(store, conversation.id) == ["mine"] and _contents(store, other.id) == ["theirs"]


# -- revisions --------------------------------------------------------------------------------------


def test_revisions_are_numbered_switchable_and_mirrored_on_the_message(store: ConversationStore):
    conversation = store.create("chat", "m")
    question = store.add_message(conversation.id, "user", "q")
    answer = store.add_message(conversation.id, "assistant", "first try", reasoning="r1", status="cancelled",
                               stats={"steps": 4}, settings={"temperature": 0.7})
    second = store.add_revision(answer.id, "second try", reasoning="r2", stats={"steps": 9},
                                settings={"temperature": 0.0})
    third = store.add_revision(answer.id, "third try", status="error")

    revisions = store.revisions(answer.id)
    assert [(r.number, r.content, r.status) for r in revisions] == [
        (1, "first try", "cancelled"), (2, "second try", "complete"), (3, "third try", "error")
    ]
    assert revisions[0].settings == {"temperature": 0.7} and revisions[0].stats == {"steps": 4}
    assert revisions[1:] == [second, third]
    assert third.settings is None and third.stats is None
    assert store.get_message(answer.id).revision == 3

    shown = store.set_current_revision(answer.id, 2)
    assert (shown.content, shown.reasoning, shown.status, shown.stats, shown.revision) == (
        "second try", "r2", "complete", {"steps": 9}, 2
    )
    assert store.get(conversation.id).messages[-1] == shown
    assert _contents(store, conversation.id) == ["q", "second try"]
    assert store.revisions(question.id) == []
    with pytest.raises(ValueError):
        store.add_revision(question.id, "users have no revisions")
    with pytest.raises(NotFoundError):
        store.set_current_revision(answer.id, 4)
    assert store.get_message(answer.id) == shown  # a refused switch changes nothing


def test_adding_a_revision_counts_as_a_change_and_switching_does_not(store: ConversationStore):
    conversation = store.create("chat", "m")
    answer = store.add_message(conversation.id, "assistant", "a")
    before = store.get(conversation.id).updated_at
    store.add_revision(answer.id, "b")
    after = store.get(conversation.id).updated_at
    assert after > before
    store.set_current_revision(answer.id, 1)
    store.set_current_leaf(conversation.id, answer.id)
    assert store.get(conversation.id).updated_at == after


@pytest.mark.parametrize("full_text", [True, False])
def test_search_sees_the_current_revision(monkeypatch, tmp_path: Path, full_text: bool):
    if not full_text:
        monkeypatch.setattr(schema, "fts5_available", lambda connection: False)
    with ConversationStore(tmp_path / "conversations.sqlite3", clock=FakeClock()) as store:
        assert store.full_text_search is full_text
        conversation = store.create("chat", "m")
        answer = store.add_message(conversation.id, "assistant", "lighthouse")
        store.add_revision(answer.id, "windmill")
        assert [hit.message_id for hit in store.search("windmill")] == [answer.id]
        assert store.search("lighthouse") == []
        store.set_current_revision(answer.id, 1)
        assert [hit.message_id for hit in store.search("lighthouse")] == [answer.id]
        assert store.search("windmill") == []
        if full_text:
            store._connection.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")


# -- trajectories -----------------------------------------------------------------------------------


def _answer(store: ConversationStore, conversation_id: int, text: str) -> int:
    message = store.add_message(conversation_id, "assistant", text)
    return store.revisions(message.id)[0].id


def test_trajectories_save_load_and_replace(store: ConversationStore):
    conversation = store.create("chat", "m")
    revision = _answer(store, conversation.id, "a")
    assert store.load_trajectory(revision) is None
    assert store.save_trajectory(revision, b"\x00\x01zlib") is True
    assert store.load_trajectory(revision) == b"\x00\x01zlib"
    assert store.save_trajectory(revision, bytearray(b"again")) is True
    assert store.load_trajectory(revision) == b"again"
    with pytest.raises(TypeError):
        store.save_trajectory(revision, "text")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        store.save_trajectory(revision + 100, b"x")
    with pytest.raises(NotFoundError):
        store.load_trajectory(revision + 100)


def test_the_cap_evicts_the_conversations_oldest_trajectories_first(store: ConversationStore):
    # The fixture's cap is 100 bytes per conversation.
    conversation = store.create("chat", "m")
    first, second, third, fourth = (_answer(store, conversation.id, f"a{n}") for n in range(4))
    elsewhere = _answer(store, store.create("other", "m").id, "b")
    assert store.save_trajectory(elsewhere, b"e" * 90)
    assert store.save_trajectory(first, b"1" * 40)
    assert store.save_trajectory(second, b"2" * 40)
    assert store.save_trajectory(third, b"3" * 40)  # 120 > 100: the oldest one goes
    assert [store.load_trajectory(r) for r in (first, second, third)] == [None, b"2" * 40, b"3" * 40]
    assert store.save_trajectory(first, b"1" * 70)  # re-recorded: now the newest, and both others go
    assert [store.load_trajectory(r) for r in (first, second, third)] == [b"1" * 70, None, None]
    assert store.save_trajectory(fourth, b"4" * 30)  # exactly at the cap: nothing goes
    assert store.load_trajectory(first) == b"1" * 70
    assert store.load_trajectory(elsewhere) == b"e" * 90  # other conversations keep theirs


def test_a_trajectory_over_the_cap_alone_is_not_stored(store: ConversationStore):
    conversation = store.create("chat", "m")
    kept, big = _answer(store, conversation.id, "kept"), _answer(store, conversation.id, "big")
    assert store.save_trajectory(kept, b"k" * 60)
    assert store.save_trajectory(big, b"b" * 101) is False
    assert store.load_trajectory(big) is None
    assert store.load_trajectory(kept) == b"k" * 60  # nothing was evicted for it
    assert store.save_trajectory(kept, b"k" * 101) is False
    assert store.load_trajectory(kept) == b"k" * 60  # nor replaced


def test_deleting_a_conversation_deletes_its_revisions_and_trajectories(store: ConversationStore):
    conversation = store.create("chat", "m")
    revision = _answer(store, conversation.id, "a")
    store.save_trajectory(revision, b"t")
    # A long chain too: deleting must not recurse message by message (SQLite stops at 1000 levels).
    for index in range(1200):
        store.add_message(conversation.id, "user" if index % 2 else "assistant", f"m{index}")
    kept = store.create("kept", "m")
    kept_revision = _answer(store, kept.id, "b")
    store.save_trajectory(kept_revision, b"k")
    store.delete(conversation.id)
    connection = store._connection
    assert connection.execute("SELECT COUNT(*) FROM messages").fetchone() == (1,)
    assert connection.execute("SELECT COUNT(*) FROM revisions").fetchone() == (1,)
    assert connection.execute("SELECT revision_id FROM trajectories").fetchall() == [(kept_revision,)]
    with pytest.raises(NotFoundError):
        store.load_trajectory(revision)
    assert connection.execute("PRAGMA foreign_key_check").fetchall() == []


def test_the_cap_is_a_constructor_argument(tmp_path: Path):
    with ConversationStore(":memory:") as default:
        assert default.trajectory_cap == 16 * 1024 * 1024
    with pytest.raises(ValueError):
        ConversationStore(":memory:", trajectory_cap=-1)
    with ConversationStore(":memory:", trajectory_cap=0) as none_kept:
        conversation = none_kept.create("chat", "m")
        revision = _answer(none_kept, conversation.id, "a")
        assert none_kept.save_trajectory(revision, b"") is True
        assert none_kept.save_trajectory(revision, b"x") is False


# -- export -----------------------------------------------------------------------------------------


def test_export_has_the_system_prompt_revisions_and_branch_notes(store: ConversationStore):
    conversation = store.create("Lighthouses", "m", system_prompt="You answer in one sentence.")
    question = store.add_message(conversation.id, "user", "Why are lighthouses striped?")
    answer = store.add_message(conversation.id, "assistant", "First answer.", status="cancelled",
                               settings={"temperature": 0.7}, stats={"steps": 4})
    store.add_revision(answer.id, "Second answer.", reasoning="Think of daylight.", settings={"temperature": 0.2})
    store.add_revision(answer.id, "Third answer.", stats={"steps": 8})
    store.set_current_revision(answer.id, 2)
    store.add_message(conversation.id, "user", "Why are lighthouses tall?", parent_id=question.parent_id)
    store.switch_branch(question.id)

    markdown = store.export_markdown(conversation.id)
    lines = markdown.splitlines()
    assert [line for line in lines if line.startswith("## ")] == ["## System prompt", "## User", "## Assistant"]
    assert lines[lines.index("## System prompt") + 2] == "You answer in one sentence."
    assert "*(Branch 1 of 2 here; the other branches are not in this export.)*" in lines
    assert "tall" not in markdown  # the other branch's messages are not exported
    assert "*Revision 2 of 3 · thinking on · settings: temperature=0.2*" in lines
    folded = markdown.index("<summary>Other revisions (2)</summary>")
    # The current revision comes first, the others after it, newest first, each with settings and stats.
    assert markdown.index("Second answer.") < folded
    assert folded < markdown.index("### Revision 3") < markdown.index("### Revision 1")
    assert lines[lines.index("### Revision 3") + 2] == "*thinking off · stats: steps=8*"
    assert lines[lines.index("### Revision 1") + 2] == "*thinking off · settings: temperature=0.7 · stats: steps=4*"
    assert markdown.index("First answer.") < markdown.index("*(cancelled)*")
    assert markdown.index("<summary>Reasoning</summary>") < markdown.index("Think of daylight.") < folded
    assert lines[-1] == "</details>"


def test_export_of_a_plain_conversation_has_no_revision_or_branch_notes(store: ConversationStore):
    conversation = store.create("plain", "m")
    store.add_message(conversation.id, "user", "hi")
    store.add_message(conversation.id, "assistant", "hello")
    markdown = store.export_markdown(conversation.id)
    assert "Revision" not in markdown and "Branch" not in markdown and "System prompt" not in markdown
    assert markdown.endswith("## Assistant\n\nhello\n\n*thinking off*\n")   # (per answer)


def test_foreign_keys_hold_after_branching(store: ConversationStore):
    conversation = store.create("chat", "m")
    question = store.add_message(conversation.id, "user", "q")
    store.add_message(conversation.id, "assistant", "a")
    store.add_message(conversation.id, "user", "q'", parent_id=question.parent_id)
    assert store._connection.execute("PRAGMA foreign_key_check").fetchall() == []
    with pytest.raises(sqlite3.IntegrityError):
        store._connection.execute("UPDATE messages SET parent_id = 999 WHERE id = ?", (question.id,))
