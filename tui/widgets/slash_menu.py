"""The menu above the message box while a slash command is typed: the matching commands, one a line, the
first one (what Tab completes) marked."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ..slash_commands import matching, typed_command_word

HINT = "Tab completes · Enter runs · //text sends a leading slash as text"


class SlashMenu(Static):
    DEFAULT_CSS = """
    SlashMenu {
        display: none;
        height: auto;
        padding: 0 1;
        background: $boost;
        color: $text-muted;
    }
    """

    def __init__(self, **kwargs):
        super().__init__("", markup=False, **kwargs)
        self.shown: tuple[str, ...] = ()   # the names listed now (for tests and the handler)

    def follow(self, text: str, unavailable: dict[str, str] | None = None) -> None:
        """Show the commands matching what is typed (`text`: the whole message); hide when it is no slash word.
        `unavailable` maps names to why they cannot be used now (shown dim, with the reason)."""
        word = typed_command_word(text)
        found = matching(word) if word is not None else []
        self.shown = tuple(command.name for command in found)
        self.display = word is not None
        if word is None:
            return
        unavailable = unavailable or {}
        lines = Text()
        if not found:
            lines.append(f"{word}: no such command; Enter asks before sending it as text\n", style="bold")
        width = max((len(c.name) + len(c.argument) + 1 for c in found), default=0)
        for index, command in enumerate(found):
            usage = f"{command.name} {command.argument}".rstrip().ljust(width)
            why = unavailable.get(command.name)
            style = "dim strike" if why else ("bold reverse" if index == 0 else "bold")
            lines.append("› " if index == 0 else "  ")
            lines.append(usage, style=style)
            lines.append(f"  {why or command.help}\n", style="dim" if why else "")
        lines.append(HINT, style="italic")
        self.update(lines)
