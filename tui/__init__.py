"""diffusion-chat's terminal chat app (Textual), built on the MLX engine in `engine`."""
