"""One module per model family, in the style of mlx-lm: a config dataclass read from config.json,
small nn.Modules named after the checkpoint's weight names, and `sanitize()` for checkpoint names."""
