"""The app against a server: `RemoteBackend` speaks OpenAI's chat completions to `diffusion-chat serve`
(with live frames), vLLM, SGLang, mlx-vlm's server or mlxcel (committed blocks only), behind the engine
thread's protocol. No Textual here."""

from .backend import RemoteBackend, api_base

__all__ = ["RemoteBackend", "api_base"]
