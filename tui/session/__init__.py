"""The chat's turn logic without Textual (unit-tested with a fake view): `ChatSession` and what it is made of."""

from .chat_session import ChatSession
from .view import Backend, ChatView

__all__ = ["Backend", "ChatSession", "ChatView"]
