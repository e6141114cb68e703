"""`diffusion-chat serve`: an OpenAI-compatible HTTP server for the engine, that can also stream the
denoising frames (the `diffusion_frame` extension, engine.serve.wire).

* `bridge` — the one engine thread (engine.thread.worker) and each request's events, in order;
* `requests` / `images` — request bodies checked and turned into what the engine runs; `admission` — the
  prompt checked against the context before anything is queued;
* `chat` — a chat completion answered (streamed or whole), with `stops` (stop strings at block commits);
  `completions` — `/v1/completions`, a prompt and a suffix answered by infilling;
* `chunks` / `errors` — OpenAI's chunk, completion and error objects;
* `observe` — the access log and `/metrics`;
* `app` — the Starlette app (routes, key, limits, CORS); `run` — uvicorn around it, with the graceful ctrl-c.

Nothing here imports the UI; MLX runs only on the engine thread.
"""
