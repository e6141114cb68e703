"""Errors the engine reports to people, as one clear line.

Anything raised as `EngineError` is a problem with the user's input or files (a missing folder, an
unknown model type, a bad setting); its message is printed as-is, without a traceback.
"""


class EngineError(Exception):
    """A user-facing problem: the message is one line that says what is wrong and, if possible, what to do."""


class CheckpointError(EngineError):
    """The checkpoint folder, its config or its weights cannot be used."""


class SettingsError(EngineError):
    """A sampler or generation setting is outside its valid range.

    The message names the settings it is about through `{0}`, `{1}`, ... placeholders, so each front end can
    name them its own way: `str(error)` uses the setting names (`top_p`), `error.render(flag)` the command
    line's (`--top-p`), the sampler panel its labels."""

    def __init__(self, template: str, *settings: str):
        self.template = template
        self.settings = settings
        super().__init__(self.render())

    def render(self, name=str) -> str:
        return self.template.format(*map(name, self.settings)) if self.settings else self.template


class InputError(EngineError):
    """A prompt, message list or attachment cannot be used."""


class NonFiniteOutput(EngineError):
    """The network's logits hold NaN or Inf: checked at the first step of every block, whose values are read
    anyway, so the check adds no host sync. Nothing the sampler could do with them would mean anything."""

    MESSAGE = "the model produced NaN/Inf; the weights may be damaged"

    def __init__(self, message: str = MESSAGE):
        super().__init__(message)
