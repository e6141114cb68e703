"""`diffusion-chat serve`: an OpenAI-compatible HTTP server for the engine, that can also stream the
denoising frames (the `diffusion_frame` extension, engine.wire).

* `bridge` — the one engine thread (engine.worker) and each request's events, in order;
* `requests` / `images` — request bodies checked and turned into what the engine runs;
* `chunks` / `errors` — OpenAI's chunk, completion and error objects;
* `app` — the Starlette app (routes, key, limits, streaming); `run` — uvicorn around it.

Nothing here imports the UI; MLX runs only on the engine thread.
"""
