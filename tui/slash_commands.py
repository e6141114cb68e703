"""The commands typed at the start of a message (`/system TEXT`, `/fill TEXT`, `/image PATH`, `/help`, …): their
names and help lines for the menu shown while one is typed, and how a message's first word is read.

Plain data and pure functions (no Textual): the menu widget and the prompt's handler use them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SlashCommand:
    name: str          # with its slash: "/system"
    argument: str      # what follows it, as the menu shows it ("TEXT"; "" for none)
    help: str          # one line
    action: str = ""   # for commands without an argument: the chat screen's action they run


SLASH_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("/help", "", "keys and commands (F1)", "app.help"),
    SlashCommand("/system", "TEXT", "this conversation's system prompt (alone: remove it)"),
    SlashCommand("/fill", "TEXT", "answer with TEXT, only its ___ holes denoised"),
    SlashCommand("/image", "PATH", "attach an image (vision models)"),
    SlashCommand("/new", "", "a new conversation (ctrl+n)", "new_conversation"),
    SlashCommand("/chats", "", "saved conversations (ctrl+o)", "app.conversations"),
    SlashCommand("/model", "", "choose or load a model (ctrl+l)", "app.choose_model"),
    SlashCommand("/sampler", "", "show or hide the sampler panel (ctrl+b)", "toggle_sampler"),
    SlashCommand("/thinking", "", "thinking on/off for this conversation (ctrl+t)", "toggle_thinking"),
    SlashCommand("/quit", "", "quit (ctrl+q)", "app.quit"),
)
BY_NAME = {command.name: command for command in SLASH_COMMANDS}


def typed_command_word(text: str) -> str | None:
    """The command word being typed: the whole text while it is one slash word (no space or newline yet)."""
    if not text.startswith("/") or any(c.isspace() for c in text):
        return None
    return text


def matching(word: str) -> list[SlashCommand]:
    """The commands whose name starts with `word` (case-insensitive), in menu order."""
    word = word.lower()
    return [command for command in SLASH_COMMANDS if command.name.startswith(word)]


def split_command(text: str) -> tuple[str, str] | None:
    """A message that starts with a slash word: (the word, the rest stripped); else None. `//text` is plain
    text starting with one slash (the way to send a slash word as a message without being asked)."""
    if not text.startswith("/") or text.startswith("//") or len(text) == 1:
        return None
    head, *rest = text.split(maxsplit=1)
    return head, rest[0].strip() if rest else ""


def completion(word: str) -> str:
    """What Tab adds to a typed command word: the rest of the first matching name (and a space if it takes an
    argument); "" when nothing matches or the word is already a full name."""
    found = matching(word)
    if not found or found[0].name == word:
        return ""
    first = found[0]
    return first.name[len(word):] + (" " if first.argument else "")
