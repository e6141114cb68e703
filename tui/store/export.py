"""A conversation as Markdown, and the file name an export gets by default."""

from __future__ import annotations

import re

from .records import Conversation


def export_file_name(title: str, conversation_id: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40] or "conversation"
    return f"{slug}-{conversation_id}.md"


def to_markdown(conversation: Conversation) -> str:
    """Title, model and settings, then each message under its role."""
    lines = [f"# {conversation.title}", ""]
    lines.append(f"- Model: `{conversation.model}`")
    lines.append(f"- Started: {conversation.created_at.astimezone():%Y-%m-%d %H:%M}")
    lines.append(f"- Thinking: {'on' if conversation.think else 'off'}")
    if conversation.settings:
        overrides = ", ".join(f"{key}={value}" for key, value in sorted(conversation.settings.items()))
        lines.append(f"- Settings: {overrides}")
    for message in conversation.messages:
        lines += ["", f"## {message.role.capitalize()}", ""]
        if message.reasoning:
            lines += ["<details>", "<summary>Reasoning</summary>", "", message.reasoning.strip(), "", "</details>", ""]
        lines.append(message.content.strip())
        if message.images:
            lines += ["", "Images: " + ", ".join(f"`{image}`" for image in message.images)]
        if message.status != "complete":
            lines += ["", f"*({'cancelled' if message.status == 'cancelled' else 'stopped by an error'})*"]
    return "\n".join(lines) + "\n"
