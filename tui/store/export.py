"""A conversation as Markdown, and the file name an export gets by default.

The export is the current path, what the chat shows: the system prompt, then each message under its role.
An assistant message shows its current revision, then its other revisions, newest first, folded in a
`<details>` block with the settings and stats each was made with. Where other branches start at a
message, a note says so; their messages are not exported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..records import Conversation, Revision
from ..words import human, per_block

_STOPPED = {"cancelled": "*(cancelled)*", "error": "*(stopped by an error)*"}


def export_file_name(title: str, conversation_id: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40] or "conversation"
    return f"{slug}-{conversation_id}.md"


def to_markdown(
    conversation: Conversation,
    revisions: Mapping[int, Sequence[Revision]] | None = None,
    branches: Mapping[int, tuple[int, int]] | None = None,
) -> str:
    """`revisions`: message id -> all its revisions; `branches`: message id -> (its place, how many
    siblings it has, itself included)."""
    revisions, branches = revisions or {}, branches or {}
    lines = [f"# {conversation.title}", ""]
    lines.append(f"- Model: `{conversation.model}`")
    lines.append(f"- Started: {conversation.created_at.astimezone():%Y-%m-%d %H:%M}")
    answers = [m for m in conversation.messages if m.role == "assistant"]
    thought = sum(_thought(m.reasoning, m.stats) for m in answers)
    # Per answer, not the conversation's switch as it is now (it may have been flipped since).
    lines.append(f"- Thinking: in {thought} of {len(answers)} answers" if answers else
                 f"- Thinking: {'on' if conversation.think else 'off'} for the next answer")
    if conversation.system_prompt is not None:
        lines += ["", "## System prompt", "", conversation.system_prompt.strip()]
    for message in conversation.messages:
        lines += ["", f"## {message.role.capitalize()}", ""]
        place, count = branches.get(message.id, (1, 1))
        if count > 1:
            lines += [f"*(Branch {place} of {count} here; the other branches are not in this export.)*", ""]
        lines += _body(message.content, message.reasoning, message.status, message.images)
        if message.role == "assistant" and not revisions.get(message.id):
            lines += ["", f"*thinking {'on' if _thought(message.reasoning, message.stats) else 'off'}*"]
        lines += _revisions(message.revision, revisions.get(message.id, ()))
    return "\n".join(lines) + "\n"


def _body(content: str, reasoning: str, status: str, images: Sequence[str] = ()) -> list[str]:
    lines = []
    if reasoning:
        lines += ["<details>", "<summary>Reasoning</summary>", "", reasoning.strip(), "", "</details>", ""]
    lines.append(content.strip())
    if images:
        lines += ["", "Images: " + ", ".join(f"`{image}`" for image in images)]
    if status in _STOPPED:
        lines += ["", _STOPPED[status]]
    return lines


def _revisions(current_number: int | None, revisions: Sequence[Revision]) -> list[str]:
    current = next((revision for revision in revisions if revision.number == current_number), None)
    others = sorted((revision for revision in revisions if revision is not current), key=lambda r: -r.number)
    lines = []
    if current is not None:
        numbered = [f"Revision {current.number} of {len(revisions)}"] if others or current.settings or current.stats \
            else []
        lines += ["", "*" + " · ".join([*numbered, *_made_with(current)]) + "*"]
    if others:
        lines += ["", "<details>", f"<summary>Other revisions ({len(others)})</summary>"]
        for revision in others:
            lines += ["", f"### Revision {revision.number}", ""]
            if revision.settings or revision.stats:
                lines += ["*" + " · ".join(_made_with(revision)) + "*", ""]
            lines += _body(revision.content, revision.reasoning, revision.status)
        lines += ["", "</details>"]
    return lines


def _thought(reasoning: str, stats: Mapping | None) -> bool:
    """Whether an answer was made thinking: what its stats say, else whether it has reasoning."""
    if stats and "think" in stats:
        return bool(stats["think"])
    return bool(reasoning)


def _made_with(revision: Revision) -> list[str]:
    parts = [f"thinking {'on' if _thought(revision.reasoning, revision.stats) else 'off'}"]
    for name, values in (("settings", revision.settings), ("stats", revision.stats)):
        shown = {key: value for key, value in (values or {}).items() if key != "think"}
        if shown:
            parts.append(f"{name}: " + ", ".join(_value_text(key, value) for key, value in sorted(shown.items())))
    return parts


def _value_text(key: str, value) -> str:
    """One setting or stat; the per-block lists as numbers a person reads (`b1 32 32 · b2 16 8 8`)."""
    if key == "accepted_per_step" and isinstance(value, list):
        return "accepted per step " + (per_block(value) if value else "-")
    if isinstance(value, list) and all(isinstance(v, (int, float)) for v in value):
        return f"{human(key)} " + (" ".join(map(str, value)) or "-")
    if isinstance(value, str):
        return f"{key}={human(value)}"
    return f"{key}={value}"
