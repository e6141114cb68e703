"""The headless commands: `diffusion-chat generate` (one reply, for scripts) and `diffusion-chat serve` (an
OpenAI-compatible server), with what every command shares (`common`: one-line errors, the model flags and the
sampler flags generated from the settings schema). Nothing here imports the UI or Textual, so both commands
start without them; `tui.cli` dispatches to them and imports the app only for the app's own commands.
"""
