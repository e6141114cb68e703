"""One batched decoder step vs the same requests' solo steps (not a test): 4 requests on the mid benchmark
checkpoint (bench/random_checkpoint.py), full 256-token canvases with a self-conditioning signal; prints the
wall time of each, and with `--profile` a cProfile of each (MLX is lazy: the time shows up where the host path
evaluates — `geglu`, `before_rope` — and in the final `mx.eval`, i.e. it is MLX's dense products).

Usage: python bench/profile_batched_step.py [--profile]
"""
import cProfile, pstats, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine
engine.prepare_process()
import mlx.core as mx, numpy as np
from random_checkpoint import write_random_dg_checkpoint
from engine.generation.forward import DenoiseCall, forward_all
p = Path(tempfile.gettempdir()) / "profile-batched-mid-dg"
if not (p / "model.safetensors").exists():
    write_random_dg_checkpoint(p)
net = engine.load(str(p)).network
rng = np.random.default_rng(0)
V = net.vocab_size
calls = []
for prompt in (20, 25, 30, 22):
    cache = net.prefill(mx.array(rng.integers(0, V, (1, prompt)), dtype=mx.int32))
    sig = net.self_conditioning_from_probabilities(rng.dirichlet(np.ones(V)*0.1, 256).astype(np.float32))
    calls.append(DenoiseCall(mx.array(rng.integers(0, V, (1, 256)), dtype=mx.int32), cache, {"self_conditioning": sig, "softcap": False}))
def solo():
    for c in calls: mx.eval(c.run(net))
def batch():
    mx.eval(forward_all(net, calls))
for f in (solo, batch): f()
for f in (solo, batch, solo, batch):
    t=time.perf_counter(); f(); print(f.__name__, round(time.perf_counter()-t,3))
if "--profile" in sys.argv:
    for f in (solo, batch):
        pr = cProfile.Profile(); pr.enable(); f(); pr.disable()
        print("=====", f.__name__); pstats.Stats(pr).sort_stats("tottime").print_stats(14)
