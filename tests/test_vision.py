"""Gemma 4 vision tower (engine/models/gemma4_vision.py) against the dg_vision goldens, plus its geometry."""

from __future__ import annotations

import json
import math
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest
from mlx.utils import tree_flatten
from PIL import Image

import engine
from engine.generation.randomness import Draws
from engine.errors import InputError
from engine.events import Finished, Started
from engine.images.processor import ImageProcessor, image_runs
from engine.models.diffusion_gemma import encoder_mask, image_run_mask, make_processor
from engine.models.gemma4_vision import (
    VISION_PREFIXES,
    MultimodalEmbedder,
    PatchEmbedder,
    VisionConfig,
    VisionTower,
    keep_vision_weight,
    rope_2d,
    rope_tables,
)

FIXTURES = Path(__file__).parent / "fixtures"
CHECKPOINT = FIXTURES / "checkpoints" / "dg_vision"
GOLDEN = FIXTURES / "golden" / "dg_vision"
TOWER_PREFIX, EMBEDDER_PREFIX = VISION_PREFIXES


def _close(actual: mx.array, expected: np.ndarray):
    """The fixture README's vision tolerance: rtol 1e-4, atol 1e-4 x max|ref|."""
    assert tuple(actual.shape) == expected.shape
    np.testing.assert_allclose(np.array(actual), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


@pytest.fixture(scope="module")
def checkpoint():
    config = json.loads((CHECKPOINT / "config.json").read_text())
    weights = mx.load(str(CHECKPOINT / "model.safetensors"))
    return config, weights


@pytest.fixture(scope="module")
def loaded(checkpoint):
    config, weights = checkpoint
    vision_config = VisionConfig.from_dict(config["vision_config"])
    tower = VisionTower(vision_config)
    embedder = MultimodalEmbedder(vision_config.hidden_size, config["text_config"]["hidden_size"],
                                  vision_config.rms_norm_eps)
    for module, prefix in ((tower, TOWER_PREFIX), (embedder, EMBEDDER_PREFIX)):
        module.load_weights([(k[len(prefix):], v) for k, v in weights.items() if k.startswith(prefix)], strict=True)
    return tower, embedder


@pytest.fixture(scope="module")
def golden():
    return np.load(GOLDEN / "vision.npz")


def test_module_tree_is_named_after_the_checkpoint(checkpoint, loaded):
    _, weights = checkpoint
    tower, embedder = loaded
    names = {TOWER_PREFIX + k for k, _ in tree_flatten(tower.parameters())}
    names |= {EMBEDDER_PREFIX + k for k, _ in tree_flatten(embedder.parameters())}
    assert names == {k for k in weights if k.startswith(VISION_PREFIXES)}
    assert TOWER_PREFIX + "encoder.layers.0.self_attn.q_proj.linear.weight" in names


@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
def test_vision_tower_matches_reference(loaded, golden):
    tower, _ = loaded
    _close(tower(mx.array(golden["pixel_values"])), golden["vision_tower_out"])


@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
def test_image_features_match_reference(loaded, golden):
    tower, embedder = loaded
    features = embedder(tower(mx.array(golden["pixel_values"])))
    assert features.dtype == mx.float32
    _close(features, golden["image_features"])


def test_tower_output_count_follows_processor_for_any_aspect_ratio(loaded):
    tower, _ = loaded
    processor = ImageProcessor(image_token_id=0, boi_token_id=0, eoi_token_id=0, max_soft_tokens=70)
    for width, height in ((200, 150), (150, 200), (48, 48), (1000, 90), (30, 700)):
        new_width, new_height = processor.target_size(width, height)
        pixels = mx.random.uniform(shape=(3, new_height, new_width), key=mx.random.key(width))
        out = tower(pixels)
        assert out.shape == (processor.soft_token_count(width, height), 32)
        assert np.isfinite(np.array(out)).all()


def test_tower_refuses_sides_off_the_grid(loaded):
    tower, _ = loaded
    with pytest.raises(InputError, match="multiples of 48"):
        tower(mx.zeros((3, 48, 50)))
    with pytest.raises(InputError, match=r"\[3, H, W\]"):
        tower(mx.zeros((1, 3, 48, 48)))


def test_patches_flatten_row_column_channel_in_raster_order():
    config = VisionConfig(hidden_size=768, patch_size=16, position_embedding_size=8)
    embedder = PatchEmbedder(config)
    embedder.input_proj.weight = mx.eye(768)
    rng = np.random.default_rng(0)
    pixels = rng.uniform(size=(3, 32, 48)).astype(np.float32)
    rows, cols = mx.array([0, 0, 0, 1, 1, 1]), mx.array([0, 1, 2, 0, 1, 2])
    out = np.array(embedder(mx.array(pixels), rows, cols))
    for index in range(6):
        r, c = divmod(index, 3)
        patch = pixels[:, 16 * r:16 * (r + 1), 16 * c:16 * (c + 1)].transpose(1, 2, 0).reshape(-1)
        np.testing.assert_allclose(out[index], 2 * (patch - 0.5), atol=1e-6)


def test_position_table_adds_column_then_row_and_zero_past_the_end():
    config = VisionConfig(hidden_size=4, patch_size=1, position_embedding_size=3)
    embedder = PatchEmbedder(config)
    embedder.input_proj.weight = mx.zeros((4, 3))
    table = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    embedder.position_embedding_table = mx.array(table)
    rows, cols = mx.array([0, 2, 1, 5]), mx.array([1, 0, 4, 2])
    out = np.array(embedder(mx.full((3, 1, 4), 0.5), rows, cols))
    np.testing.assert_array_equal(out[0], table[0, 1] + table[1, 0])
    np.testing.assert_array_equal(out[1], table[0, 0] + table[1, 2])
    np.testing.assert_array_equal(out[2], table[1, 1])          # column 4 is past the table: zero
    np.testing.assert_array_equal(out[3], table[0, 2])          # row 5 is past the table: zero


def test_rope_first_half_follows_columns_second_half_rows():
    head_dim, theta = 8, 100.0
    rng = np.random.default_rng(1)
    x = mx.array(rng.normal(size=(3, 1, head_dim)).astype(np.float32))
    rows, cols = mx.array([0, 0, 5]), mx.array([0, 7, 0])
    out = np.array(rope_2d(x, *rope_tables(rows, cols, head_dim, theta, mx.float32)))
    x = np.array(x)
    np.testing.assert_allclose(out[0], x[0], atol=1e-6)                     # origin: nothing turns
    np.testing.assert_allclose(out[1, :, 4:], x[1, :, 4:], atol=1e-6)       # column only: row half untouched
    np.testing.assert_allclose(out[2, :, :4], x[2, :, :4], atol=1e-6)       # row only: column half untouched
    # rotate-half pairing (j, j + 2) in the column half with frequencies 100^(-2i/4)
    angle = 7 * theta ** (-np.arange(2) * 2 / 4)
    first, second = x[1, 0, :2], x[1, 0, 2:4]
    np.testing.assert_allclose(out[1, 0, :2], first * np.cos(angle) - second * np.sin(angle), atol=1e-5)
    np.testing.assert_allclose(out[1, 0, 2:4], second * np.cos(angle) + first * np.sin(angle), atol=1e-5)


def test_rope_scores_depend_on_relative_offsets_only():
    head_dim = 8
    rng = np.random.default_rng(2)
    q, k = (mx.array(rng.normal(size=(1, 1, head_dim)).astype(np.float32)) for _ in range(2))

    def score(q_pos, k_pos):
        rq = rope_2d(q, *rope_tables(mx.array([q_pos[0]]), mx.array([q_pos[1]]), head_dim, 100.0, mx.float32))
        rk = rope_2d(k, *rope_tables(mx.array([k_pos[0]]), mx.array([k_pos[1]]), head_dim, 100.0, mx.float32))
        return float((rq * rk).sum())

    assert score((1, 2), (3, 5)) == pytest.approx(score((11, 6), (13, 9)), abs=1e-4)
    assert score((1, 2), (3, 5)) != pytest.approx(score((1, 2), (5, 3)), abs=1e-3)


def test_pooling_averages_3x3_blocks_in_raster_order_times_sqrt_hidden():
    config = VisionConfig(hidden_size=768, num_hidden_layers=0, position_embedding_size=8)
    tower = VisionTower(config)
    tower.patch_embedder.input_proj.weight = mx.eye(768)
    pixels = np.random.default_rng(3).uniform(size=(3, 96, 144)).astype(np.float32)  # 6 x 9 patches
    out = np.array(tower(mx.array(pixels)))
    patches = 2 * (pixels.reshape(3, 6, 16, 9, 16).transpose(1, 3, 2, 4, 0).reshape(6, 9, 768) - 0.5)
    expected = patches.reshape(2, 3, 3, 3, 768).mean(axis=(1, 3)).reshape(6, 768) * math.sqrt(768)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4)


def test_standardize_is_optional():
    plain = VisionTower(VisionConfig(hidden_size=8, num_hidden_layers=0, head_dim=2, num_attention_heads=4,
                                     num_key_value_heads=4, position_embedding_size=4))
    names = {k for k, _ in tree_flatten(plain.parameters())}
    assert not any(n.startswith("std_") for n in names)
    assert "std_bias" in {k for k, _ in tree_flatten(VisionTower(VisionConfig(
        hidden_size=8, num_hidden_layers=0, position_embedding_size=4, standardize=True)).parameters())}


def test_clipped_linears_clamp_and_own_their_bounds():
    config = VisionConfig(hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
                          num_key_value_heads=2, head_dim=4, position_embedding_size=4, use_clipped_linears=True)
    tower = VisionTower(config)
    names = {k for k, _ in tree_flatten(tower.parameters())}
    assert "encoder.layers.0.mlp.down_proj.output_max" in names
    projection = tower.encoder.layers[0].mlp.up_proj
    projection.output_max = mx.array(0.0)
    assert float(projection(mx.ones((5, 8))).max()) <= 0.0


def test_keep_vision_weight_drops_clip_scalars_unless_clipping():
    plain, clipped = VisionConfig(), VisionConfig(use_clipped_linears=True)
    name = TOWER_PREFIX + "encoder.layers.0.self_attn.q_proj.input_max"
    weight = TOWER_PREFIX + "encoder.layers.0.self_attn.q_proj.linear.weight"
    assert keep_vision_weight(weight, plain) and keep_vision_weight(name, clipped)
    assert not keep_vision_weight(name, plain)
    assert not keep_vision_weight(weight, None)   # text-only checkpoint


# --- integration: the DiffusionGemma network with its vision tower ------------------------------------

IMAGE = GOLDEN / "image.png"
DESCRIBE = [{"role": "user", "content": "Describe this image."}]


@pytest.fixture(scope="module")
def vision_network(load_network):
    return load_network("dg_vision")[1]


@pytest.fixture(scope="module")
def vision_model():
    return engine.load(CHECKPOINT)


def _prefill_golden(network, golden):
    return network.prefill(mx.array(golden["input_ids"][None]), None, [mx.array(golden["pixel_values"])],
                           mx.array(golden["mm_token_type_ids"][None]))


def test_network_has_a_tower_only_when_configured(load_network, vision_network):
    _, text_only = load_network("dg_text")
    assert vision_network.has_vision and not text_only.has_vision
    names = {k for k, _ in tree_flatten(vision_network.parameters())}
    assert TOWER_PREFIX + "patch_embedder.position_embedding_table" in names
    assert EMBEDDER_PREFIX + "embedding_projection.weight" in names
    assert not any(n.startswith(VISION_PREFIXES) for n, _ in tree_flatten(text_only.parameters()))


def test_sanitize_keeps_tower_weights_and_drops_clip_bounds_or_all_vision(load_network, vision_network):
    _, text_only = load_network("dg_text")
    weight = TOWER_PREFIX + "encoder.layers.0.mlp.up_proj.linear.weight"
    clip = TOWER_PREFIX + "encoder.layers.0.mlp.up_proj.output_max"
    projection = EMBEDDER_PREFIX + "embedding_projection.weight"
    weights = {weight: mx.zeros((64, 32)), clip: mx.array(1.0), projection: mx.zeros((64, 32))}
    assert set(vision_network.sanitize(weights)) == {weight, projection}
    assert text_only.sanitize(weights) == {}


@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
def test_network_image_features_match_reference(vision_network, golden):
    features = vision_network.image_features(mx.array(golden["pixel_values"]))
    assert features.dtype == mx.float32
    _close(features, golden["image_features"])


def test_prompt_embeddings_replace_soft_tokens_unscaled(vision_network, golden):
    embeddings = vision_network.prompt_embeddings(mx.array(golden["input_ids"][None]), [mx.array(golden["pixel_values"])],
                                                  mx.array(golden["mm_token_type_ids"][None]))
    _close(embeddings[0], golden["inputs_embeds"])


def test_encoder_masks_match_reference(golden, checkpoint):
    config, _ = checkpoint
    runs = image_run_mask(mx.array(golden["mm_token_type_ids"]))
    length = golden["input_ids"].shape[0]
    window = config["text_config"]["sliding_window"]
    full = np.array(encoder_mask(0, length, 0, None, runs))
    sliding = np.array(encoder_mask(0, length, 0, window, runs))
    np.testing.assert_array_equal(full, golden["encoder_mask_full_attention"])
    np.testing.assert_array_equal(sliding, golden["encoder_mask_sliding_attention"])
    # the image run is wider than the window: its tokens still see the whole image
    assert sliding[69, 7] and not sliding[75, 7]


@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
def test_prefill_with_image_matches_reference_cache_and_logits(vision_network, golden):
    cache = _prefill_golden(vision_network, golden)
    for i in range(len(cache)):
        np.testing.assert_allclose(np.array(cache[i].keys[0]), golden[f"fwd_kv_layer{i}_keys"], atol=1e-4)
        np.testing.assert_allclose(np.array(cache[i].values[0]), golden[f"fwd_kv_layer{i}_values"], atol=1e-4)
    canvas = mx.array(golden["fwd_canvas_ids"][None])
    np.testing.assert_allclose(np.array(vision_network.denoise(canvas, cache)[0]), golden["fwd_logits_nosc"], atol=1e-3)
    conditioned = vision_network.denoise(canvas, cache, mx.array(golden["fwd_sc_signal"][None]))
    np.testing.assert_allclose(np.array(conditioned[0]), golden["fwd_logits_sc"], atol=1e-3)


def test_prefill_refuses_image_token_count_mismatch(vision_network, golden):
    ids = mx.array(golden["input_ids"][None])
    with pytest.raises(InputError, match="63 image tokens but the images give 126"):
        vision_network.prefill(ids, None, [mx.array(golden["pixel_values"])] * 2, mx.array(golden["mm_token_type_ids"][None]))


def test_make_processor_only_for_vision_checkpoints(load_network, vision_network):
    text_config, _ = load_network("dg_text")
    processor = make_processor(CHECKPOINT, vision_network.config, None)
    assert isinstance(processor, ImageProcessor) and processor.max_soft_tokens == 70
    assert make_processor(FIXTURES / "checkpoints" / "dg_text", text_config, None) is None


def test_several_images_of_any_aspect_ratio_in_one_prompt(tmp_path, vision_network):
    """Two images of different shapes: each run gets its own features, and encoding the prompt in two
    parts split between the images (what a follow-up turn does) gives the same cache as one pass."""
    rng = np.random.default_rng(4)
    paths = []
    for name, size in (("wide.png", (300, 80)), ("tall.png", (90, 260))):
        paths.append(tmp_path / name)
        Image.fromarray(rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)).save(paths[-1])
    processor = make_processor(CHECKPOINT, vision_network.config, None)
    prompt = processor.prepare_prompt([2, 105, 507, 194, 488, 106, 105, 507, 191, 107], "", paths)
    first, second = image_runs(prompt.token_type_ids)
    assert prompt.image_tokens[0] != prompt.image_tokens[1]
    ids, types = mx.array([prompt.ids]), mx.array([prompt.token_type_ids])

    embeddings = vision_network.prompt_embeddings(ids, prompt.pixel_values, types)[0]
    for (start, end), pixels in zip((first, second), prompt.pixel_values):
        np.testing.assert_allclose(np.array(embeddings[start:end]), np.array(vision_network.image_features(pixels)),
                                   atol=1e-6)

    whole = vision_network.prefill(ids, None, prompt.pixel_values, types)
    split = first[1] + 1  # after the first image's eoi
    parts = vision_network.prefill(ids[:, :split], None, prompt.pixel_values[:1], types[:, :split])
    parts = vision_network.prefill(ids[:, split:], parts, prompt.pixel_values[1:], types[:, split:])
    for a, b in zip(whole, parts):
        np.testing.assert_allclose(np.array(a.keys), np.array(b.keys), atol=1e-5)
        np.testing.assert_allclose(np.array(a.values), np.array(b.values), atol=1e-5)


class RecordedDraws(Draws):
    """The reference run's random canvases, served by (block, step)."""

    def __init__(self, npz: Path):
        self.data = np.load(npz)

    def tokens(self, count, *, block, step):
        row = self.data[f"b{block}_init_canvas"] if step == -1 else self.data[f"b{block}_renoise_draw"][step]
        return row.astype(np.int32).reshape(count)

    def uniform(self, count, *, block, step):
        raise AssertionError("temperature 0 never samples proposals")


@pytest.mark.usefixtures("both_paths")  # host and pure-MLX paths
def test_chat_with_an_image_replays_the_reference_generation(vision_model):
    """engine.generate(messages, images=[...]) end to end: template, processor, tower, prefill with the
    bidirectional image block, and mlx-vlm's entropy-bound run with the image (same draws, same tokens)."""
    meta = json.loads((GOLDEN / "trace_entropy_bound.json").read_text())
    events = list(engine.generate(vision_model, messages=DESCRIBE, images=[str(IMAGE)],
                                  settings=engine.Settings(max_tokens=meta["max_tokens"], temp=0.0),
                                  randomness=RecordedDraws(GOLDEN / "trace_entropy_bound.npz")))
    assert isinstance(events[0], Started) and events[0].prompt_tokens == len(meta["input_ids"])
    finished = events[-1]
    assert isinstance(finished, Finished)
    assert list(finished.token_ids) == meta["generated_token_ids"]
    assert list(finished.stats.steps_per_block) == meta["steps_per_block"]


@pytest.fixture
def towers_run(monkeypatch):
    """The shapes of every image that goes through the vision tower during a test."""
    shapes = []
    original = VisionTower.__call__

    def counting(self, pixel_values):
        shapes.append(tuple(pixel_values.shape))
        return original(self, pixel_values)

    monkeypatch.setattr(VisionTower, "__call__", counting)
    return shapes


def test_follow_up_turn_does_not_re_encode_earlier_images(vision_model, towers_run):
    settings = engine.Settings(max_tokens=8, max_denoising_steps=2)
    session = engine.Session()
    first = [{"role": "user", "content": [{"type": "image", "path": str(IMAGE)},
                                          {"type": "text", "text": "Describe this image."}]}]
    turn1 = list(engine.generate(vision_model, messages=first, settings=settings, session=session))
    assert towers_run == [(3, 336, 432)]
    second = first + [{"role": "assistant", "content": turn1[-1].content},
                      {"role": "user", "content": "What else?"}]
    reused = list(engine.generate(vision_model, messages=second, settings=settings, session=session))
    assert towers_run == [(3, 336, 432)]            # the first image came from the cache
    assert reused[0].encoded_tokens < reused[0].prompt_tokens - 63
    fresh = list(engine.generate(vision_model, messages=second, settings=settings))
    assert len(towers_run) == 2                       # a fresh prefill encodes it again ...
    assert fresh[-1].token_ids == reused[-1].token_ids  # ... to the same answer


def test_a_different_image_of_the_same_size_is_encoded_again(vision_model, tmp_path, towers_run):
    """Images of one size expand to identical placeholder ids; the cache must still not serve the old one."""
    from PIL import Image

    other = tmp_path / "other.png"
    Image.open(IMAGE).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(other)
    settings = engine.Settings(max_tokens=8, max_denoising_steps=2)
    session = engine.Session()
    ask = lambda path: [{"role": "user", "content": [{"type": "image", "path": str(path)},
                                                     {"type": "text", "text": "Describe this image."}]}]
    list(engine.generate(vision_model, messages=ask(IMAGE), settings=settings, session=session))
    swapped = list(engine.generate(vision_model, messages=ask(other), settings=settings, session=session))
    assert len(towers_run) == 2
    assert swapped[0].encoded_tokens >= 63 + 2  # the whole image run and what follows it
    fresh = list(engine.generate(vision_model, messages=ask(other), settings=settings))
    assert fresh[-1].token_ids == swapped[-1].token_ids
