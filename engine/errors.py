"""Errors the engine reports to people, as one clear line.

Anything raised as `EngineError` is a problem with the user's input or files (a missing folder, an
unknown model type, a bad setting); its message is printed as-is, without a traceback.
"""


class EngineError(Exception):
    """A user-facing problem: the message is one line that says what is wrong and, if possible, what to do."""


class CheckpointError(EngineError):
    """The checkpoint folder, its config or its weights cannot be used."""


class SettingsError(EngineError):
    """A sampler or generation setting is outside its valid range."""


class InputError(EngineError):
    """A prompt, message list or attachment cannot be used."""
