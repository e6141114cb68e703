"""Model output made safe to draw: control characters become visible symbols.

Decoded tokens can hold any character, and a raw backspace, escape or carriage return written to the
terminal moves its cursor and corrupts the screen. C0 controls become their Unicode "control pictures"
(U+2400 block, e.g. ␈), DEL becomes ␡ and C1 controls become �. Newlines and tabs are kept where text
flows (Markdown), and drawn as ↵ and → on the canvas, where every position must stay one run of text.
"""

from __future__ import annotations

_PICTURES = {code: chr(0x2400 + code) for code in range(0x20)} | {0x7F: "\u2421"}
_PICTURES.update({code: "\ufffd" for code in range(0x80, 0xA0)})

FLOWING = str.maketrans({code: picture for code, picture in _PICTURES.items() if chr(code) not in "\n\t"} | {
    ord("\r"): None,  # a line ending's \r; the \n that follows ends the line
})
ONE_LINE = str.maketrans(_PICTURES | {ord("\n"): "↵", ord("\r"): "↵", ord("\t"): "→"})
# One character for one (controls and \r as pictures, tabs as →), only \n breaking a line: offsets into the
# shown text are offsets into the source.
EXACT = str.maketrans({code: picture for code, picture in _PICTURES.items() if code != ord("\n")}
                      | {ord("\t"): "→", 0x85: "\ufffd", 0x2028: "↵", 0x2029: "↵"})


def flowing(text: str) -> str:
    """For the transcript: newlines and tabs stay, other controls are shown."""
    return text.translate(FLOWING)


def unbroken(text: str) -> str:
    """For the canvas: controls as their pictures and line breaks as ↵, so nothing may break the line."""
    return text.translate(ONE_LINE)


def exact(text: str) -> str:
    """For text whose spans are marked (revise mode, a fill's fillings): the same length, line for line."""
    return text.translate(EXACT)
