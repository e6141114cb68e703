"""What an unset setting means for a checkpoint, as the sampler panel shows it."""

import json

import engine

from conftest import CHECKPOINTS


def test_diffusion_gemma_defaults_come_from_the_generation_config():
    model = engine.load(CHECKPOINTS / "dg_text")
    defaults = model.setting_defaults()
    generation = json.loads((CHECKPOINTS / "dg_text" / "generation_config.json").read_text())
    assert defaults["max_denoising_steps"] == generation["max_denoising_steps"]
    assert defaults["entropy_bound"] == generation["sampler_config"]["entropy_bound"]
    assert defaults["diffusion_sampler"] == "entropy-bound" and defaults["temp"] == 1.0
    assert defaults["diffusion_max_canvas_length"] == model.network.canvas_length
    # Every default is itself a valid setting.
    engine.Settings(**defaults).validated()


def test_llada2_defaults_are_the_official_ones():
    defaults = engine.load(CHECKPOINTS / "llada2").setting_defaults()
    assert (defaults["block_length"], defaults["max_denoising_steps"], defaults["diffusion_threshold"],
            defaults["temp"], defaults["top_k"], defaults["top_p"]) == (32, 32, 0.95, 0.0, None, None)
    engine.Settings(**defaults).validated()
