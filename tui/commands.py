"""The command palette's entries (ctrl+p): every action of the app and the chat screen, by name."""

from __future__ import annotations

from typing import Iterable

from textual.app import SystemCommand

from themes import THEME_NAMES

from .config import CANVAS_MODES


def app_commands(app) -> Iterable[SystemCommand]:
    chat = app.chat
    yield SystemCommand("New conversation", "Start an empty conversation", chat.action_new_conversation)
    yield SystemCommand("Conversations", "Open, rename, delete or export saved conversations",
                        app.action_conversations)
    yield SystemCommand("Search conversations", "Full-text search over every saved message",
                        app.action_conversations)   # (the list opens with its search focused)
    yield SystemCommand("Rename conversation", "Give this conversation a new title",
                        app.action_rename_conversation)
    yield SystemCommand("Delete conversation", "Delete this conversation", app.action_delete_conversation)
    yield SystemCommand("Export conversation", "Write this conversation to a Markdown file",
                        app.action_export_conversation)
    yield SystemCommand("Choose model", "Load another checkpoint (folder, Hub id or cached)",
                        app.action_choose_model)
    yield SystemCommand("Sampler panel", "Show or hide the sampler settings", chat.action_toggle_sampler)
    yield SystemCommand("Thinking on/off", "Let the model think first in this conversation",
                        chat.action_toggle_thinking)
    refused = chat.commands.images_refused()
    yield SystemCommand("Attach image", f"Not available: {refused}" if refused else
                        "Attach an image file to the next message", chat.action_attach_image)
    yield SystemCommand("Copy last answer", "Copy the last answer to the clipboard", chat.action_copy_answer)
    yield SystemCommand("Copy code block", "Copy the next code block of the last (or focused) answer",
                        chat.action_copy_code)
    yield SystemCommand("Copy reasoning", "Copy the reasoning of the last (or focused) answer",
                        chat.action_copy_reasoning)
    yield SystemCommand("Regenerate answer", "Write the last answer again with the current settings (a revision)",
                        chat.action_regenerate)
    yield SystemCommand("Previous revision", "Show the previous revision of the last (or focused) answer",
                        lambda: chat.action_switch_revision(-1))
    yield SystemCommand("Next revision", "Show the next revision of the last (or focused) answer",
                        lambda: chat.action_switch_revision(1))
    yield SystemCommand("Compare revisions", "The answer's revisions side by side: settings, steps, time",
                        chat.action_compare_revisions)
    yield SystemCommand("Revise a span", "Choose a span of the focused (or last) answer and write it again in place",
                        chat.action_revise_answer)
    yield SystemCommand("Replay the denoising", "Step through the recorded denoising of the focused (or last) answer",
                        chat.action_replay)
    yield SystemCommand("Recording on/off", "Whether answers record their denoising for replaying it",
                        app.toggle_recording)
    yield SystemCommand("Edit last message", "Edit your last message and resend it (a new branch)",
                        chat.action_edit_last_message)
    yield SystemCommand("System prompt", "Set or remove this conversation's system prompt",
                        chat.action_system_prompt)
    for mode in CANVAS_MODES:
        yield SystemCommand(f"Canvas: show {mode}", f"Positions not yet accepted show the {mode}",
                            lambda mode=mode: app.set_canvas_mode(mode))
    for name in THEME_NAMES:
        yield SystemCommand(f"Theme: {name}", f"Switch to the {name} theme",
                            lambda name=name: setattr(app, "theme", name))
    yield SystemCommand("Help", "Keys and what the canvas shows", app.action_help)
