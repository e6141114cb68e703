"""The engine thread: one long-lived thread that owns MLX for the life of an app (`worker`), and releasing MLX's
per-thread state on the thread that owns it so the program exits cleanly (`release`).
"""
