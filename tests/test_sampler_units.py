"""DiffusionGemma sampler maths against the reference helpers' outputs (tests/fixtures/units)."""

import json
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

from engine.generation.diffusion_gemma import StabilityTracker
from conftest import _host_path_available as host_path_available
from engine.cpu import sampler as host_sampler
from engine.cpu import switch
from engine.generation.fused import analyse
from engine.generation.sampling import confidence_transfer_mask, entropy_bound_mask, linear_temperature

UNITS = Path(__file__).parent / "fixtures" / "units"
DATA = np.load(UNITS / "sampler_units.npz")
CASES = json.loads((UNITS / "sampler_units.json").read_text())["cases"]


def test_linear_temperature_matches_reference_schedule():
    ours = np.array([linear_temperature(step, 48, 0.4, 0.8) for step in range(48, 0, -1)], dtype=np.float32)
    np.testing.assert_allclose(ours, DATA["linear_temperature_48"], atol=1e-6)
    assert ours[0] == np.float32(0.8) and ours[-1] > 0.4


@pytest.fixture(params=["host", "device"])
def sampler_path(request, monkeypatch):
    """Both implementations of the fused step analysis: NumPy on the host path, compiled MLX on the device (the
    pure-MLX path, which a CPU takes with the host path off)."""
    if request.param == "host" and not host_path_available():
        pytest.skip("the host path is off")
    if request.param == "device":
        monkeypatch.setenv(switch.ENV, "0")
    return request.param


def test_entropy_and_probability(sampler_path):
    logits = mx.array(DATA["entropy_logits"])
    ids = DATA["probability_ids"].reshape(-1)
    flat = logits.reshape(-1, logits.shape[-1])
    analysis = analyse(flat, proposal=ids, temp=1.0, confidence_from="processed")
    np.testing.assert_allclose(analysis.entropy.reshape(DATA["entropy_out"].shape), DATA["entropy_out"], atol=1e-5)
    np.testing.assert_allclose(analysis.probability.reshape(DATA["probability_out"].shape), DATA["probability_out"],
                               atol=1e-6)
    assert analysis.argmax.tolist() == np.argmax(np.array(flat), axis=-1).tolist()


def test_inverse_transform_sampling_draws_from_the_softmax(sampler_path):
    # Three positions, three ids: the empirical frequencies of 20,000 draws match softmax(logits / temp).
    logits = np.log(np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]], np.float32))
    rows = mx.array(np.tile(logits, (20_000 // 3 + 1, 1))[:20_000])  # rows 0, 1, 2, 0, 1, 2, ...
    uniforms = np.random.default_rng(0).random(20_000, dtype=np.float32)
    drawn = analyse(rows, temp=1.0, uniforms=uniforms).proposal
    for row in range(3):
        picked = drawn[row::3]
        frequencies = np.bincount(picked, minlength=3) / len(picked)
        np.testing.assert_allclose(frequencies, np.exp(logits[row]), atol=0.03)
    sharper = analyse(rows, temp=0.5, uniforms=uniforms, confidence_from="proposal")
    expected = np.exp(2 * logits[0]) / np.exp(2 * logits[0]).sum()
    np.testing.assert_allclose(np.bincount(sharper.proposal[0::3], minlength=3) / len(sharper.proposal[0::3]),
                               expected, atol=0.03)
    np.testing.assert_allclose(sharper.probability[0::3], expected[sharper.proposal[0::3]], atol=1e-5)


@pytest.mark.parametrize("case", ["random", "all_tiny", "ties", "one_low", "ramp"])
@pytest.mark.parametrize("bound", [0.1, 0.3])
def test_entropy_bound_mask(case, bound):
    entropy = DATA[f"entropy_mask_{case}_in"]
    expected = DATA[f"entropy_mask_{case}_bound{bound}"]
    got = np.array(entropy_bound_mask(entropy, bound))
    np.testing.assert_array_equal(got, expected)
    assert got[int(np.argmin(DATA[f"entropy_mask_{case}_in"]))]  # the lowest entropy is always accepted


def test_entropy_bound_worked_example():
    # Reference §6.2: entropies [0.4, 0.1, 0.2, 0.05], bound 0.16 -> [F, T, T, T]
    got = entropy_bound_mask(np.array([0.4, 0.1, 0.2, 0.05]), 0.16)
    assert np.array(got).tolist() == [False, True, True, True]


@pytest.mark.parametrize("case", ["mixed", "none_above", "force_all", "nothing_unrevealed", "threshold_edge"])
def test_confidence_transfer_mask(case):
    params = CASES[f"conf_mask_{case}"]
    got = confidence_transfer_mask(
        DATA[f"conf_mask_{case}_confidence"],
        DATA[f"conf_mask_{case}_unrevealed"],
        params["threshold"],
        force_all=params["force_all"],
    )
    np.testing.assert_array_equal(np.array(got), DATA[f"conf_mask_{case}_out"])


def _stop_sequence(canvases, logits):
    tracker = StabilityTracker(1)
    results = []
    for canvas in canvases:
        stable = tracker.update(np.array(canvas))
        confident = float(analyse(logits).entropy.mean()) < 0.005
        results.append(stable and confident)
    return results


def test_stable_and_confident_sequences():
    expected = CASES["stable_and_confident"]["results"]
    c1 = list(range(6))
    c2 = c1[:-1] + [99]
    sharp = mx.where(mx.arange(16)[None, :] == mx.array(c1)[:, None], 30.0, -30.0)
    soft = mx.random.normal((6, 16), key=mx.random.key(1))
    assert _stop_sequence([c1, c1, c1], sharp) == expected["stable_sharp"]
    assert _stop_sequence([c1, c1], soft) == expected["stable_soft"]
    assert _stop_sequence([c1, c2, c1], sharp) == expected["changing_sharp"]


def test_stability_threshold_zero_is_always_stable():
    tracker = StabilityTracker(0)
    assert tracker.update(np.array([1, 2])) and tracker.update(np.array([3, 4]))


@pytest.mark.parametrize("options", [
    dict(temp=0.0, confidence_from="processed"),
    dict(temp=1.0, confidence_from="processed", probabilities=True, softcap=30.0, temperature=0.8),
    dict(temp=0.7, top_k=50, top_p=0.9, confidence_from="proposal", check_finite=True),
])
@pytest.mark.cpu_host
def test_the_row_parallel_host_analysis_is_bit_identical_to_one_thread(monkeypatch, options):
    monkeypatch.setattr(host_sampler.pool, "workers", lambda: 3)   # 3 chunks of uneven size, whatever the machine has
    monkeypatch.setattr(host_sampler, "CACHED_ELEMENTS", 5 * 4096)      # each taken 5 rows at a time
    rng = np.random.default_rng(5)
    logits = mx.array(rng.normal(size=(37, 4096)).astype(np.float32) * 4)
    uniforms = rng.random(37).astype(np.float32) if options["temp"] else None
    results = []
    for minimum in (1 << 62, 1):       # never parallel, always parallel
        monkeypatch.setattr(host_sampler, "PARALLEL_MIN_ELEMENTS", minimum)
        results.append(analyse(logits, uniforms=uniforms, **options))
    one, many = results
    for name in ("argmax", "entropy", "proposal", "probability", "probabilities"):
        a, b = getattr(one, name), getattr(many, name)
        assert (a is None and b is None) or np.array_equal(a, b), name
    assert one.finite == many.finite


def _whole_vocabulary_draw(q: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    cumulative = np.cumsum(q.astype(np.float64), axis=-1)
    targets = uniforms.astype(np.float64) * cumulative[:, -1]
    return np.array([np.searchsorted(row, t, side="right") for row, t in zip(cumulative, targets)])


def test_the_blockwise_draw_picks_the_id_a_whole_vocabulary_running_sum_picks():
    rng = np.random.default_rng(11)
    vocab = 3 * host_sampler.DRAW_BLOCK + 123            # several blocks and a short last one
    q = np.exp(rng.standard_normal((400, vocab)).astype(np.float32) * 3)
    q[:, rng.random(vocab) < 0.3] = 0.0            # filtered ids (top-k / top-p) have no mass
    uniforms = rng.random(400).astype(np.float32)
    drawn = host_sampler._inverse_transform(q, uniforms)
    assert drawn.tolist() == _whole_vocabulary_draw(q, uniforms).tolist()
    assert (q[np.arange(400), drawn] > 0).all()


def test_a_draw_at_the_very_top_of_the_mass_never_lands_on_an_id_without_mass():
    q = np.zeros((2, 2 * host_sampler.DRAW_BLOCK + 5), np.float32)
    q[0, :2] = 0.5                                 # all the mass in the first block, none after
    q[1, host_sampler.DRAW_BLOCK + 7] = 1.0
    assert host_sampler._inverse_transform(q, np.array([1.0, 1.0], np.float32)).tolist() == [1, host_sampler.DRAW_BLOCK + 7]


@pytest.mark.cpu_host
@pytest.mark.parametrize("parallel", [False, True])
def test_the_host_writes_the_softmax_into_an_mlx_array_it_may_reuse(monkeypatch, parallel):
    # The host's softmax is handed to the next self-conditioning product as an MLX array it wrote in place (no
    # copy), and a step may give back the previous step's array to be written again (no new allocation).
    monkeypatch.setattr(host_sampler, "PARALLEL_MIN_ELEMENTS", 1 if parallel else 1 << 62)
    rng = np.random.default_rng(9)
    first, second = (mx.array(rng.normal(size=(19, 3000)).astype(np.float32) * 3) for _ in range(2))
    options = dict(softcap=30.0, temperature=0.9, probabilities=True)
    earlier = analyse(first, **options)
    assert isinstance(earlier.probabilities, mx.array)
    expected = mx.softmax(mx.tanh(first / 30.0) * 30.0 / 0.9, axis=-1)
    np.testing.assert_allclose(np.array(earlier.probabilities), np.array(expected), rtol=1e-5, atol=1e-8)
    embedding = mx.array(rng.normal(size=(3000, 8)).astype(np.float32))
    soft = earlier.probabilities @ embedding
    mx.eval(soft)                                     # its last use, evaluated: now it may be written again
    fresh = analyse(second, **options)
    reused = analyse(second, probabilities_into=earlier.probabilities, **options)
    assert reused.probabilities is earlier.probabilities
    np.testing.assert_array_equal(np.array(reused.probabilities), np.array(fresh.probabilities))
    np.testing.assert_allclose(np.array(reused.probabilities @ embedding), np.array(fresh.probabilities @ embedding),
                               rtol=1e-6)
    np.testing.assert_allclose(np.array(soft), np.array(expected @ embedding), rtol=1e-4, atol=1e-6)   # untouched
    other_shape = analyse(first[:5], probabilities_into=earlier.probabilities, **options)
    assert other_shape.probabilities is not earlier.probabilities and other_shape.probabilities.shape == (5, 3000)
