"""Fenced code blocks of an answer's Markdown source, for copying one of them exactly.

CommonMark's rules, with one leniency: a fence opens with three or more backticks or tildes and closes with
at least as many of the same character, alone on its line; a backtick fence's info string holds no
backtick (so ``` ``inline`` ``` text is not a fence); a shorter or other-character fence inside is content
(a ```` block can show ``` lines). Models often put code inside list items, indented by more than the three
spaces CommonMark allows outside a list, so any indentation opens a fence, and that much indentation is taken
off its content lines. A fence left open (an answer still being written, or cut short) runs to the end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OPENING = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class Fence:
    code: str          # the content, exactly (no trailing newline)
    info: str          # the info string: "python", "js title=x", "" ...
    line: int          # 0-based line of the opening fence in the source

    @property
    def language(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    def describe(self) -> str:
        lines = self.code.count("\n") + 1 if self.code else 0
        return f"{self.language or 'code'}, {lines} line{'s' * (lines != 1)}"


def code_fences(markdown: str) -> list[Fence]:
    fences = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        opening = _OPENING.match(lines[index])
        if opening is None or (opening["fence"][0] == "`" and "`" in opening["info"]):
            index += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body = []
        end = index + 1
        while end < len(lines) and not closing.match(lines[end]):
            body.append(_dedent(lines[end], indent))
            end += 1
        fences.append(Fence("\n".join(body), opening["info"].strip(), index))
        index = end + 1
    return fences


def _dedent(line: str, indent: int) -> str:
    """Up to `indent` leading spaces or tabs off a content line (CommonMark: as many as the fence had)."""
    taken = 0
    while taken < indent and taken < len(line) and line[taken] in " \t":
        taken += 1
    return line[taken:]
