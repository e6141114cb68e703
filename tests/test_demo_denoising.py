"""The bundled demos' own defaults (their generation_config.json) let a user watch a block resolve: several
denoising steps per block, a few positions at a time, and still the exact fixed answers."""

from __future__ import annotations

import pytest

import engine
from bench.eval_panel import block_record, fixed_lines, full_blocks_under_three_steps
from engine.events import BlockCommitted, Finished, Step
from engine.generation.llada2 import resolve_plan
from engine.generation.sampling import linear_temperature
from engine.settings import Settings
from scripts.demo.tasks_chat import chat_answer
from tui.demo_models import DEMO_NAMES, DEMO_ROOT

PROMPTS = {"Many thanks!": "thanks", "Could you tell me what you are?": "identity", "Morning!": "greeting"}


def test_llada2_reads_steps_and_block_length_from_its_generation_config():
    plan = resolve_plan(Settings(), {"steps": 4, "block_length": 16, "threshold": 1.0})
    assert (plan.max_denoising_steps, plan.block_length, plan.diffusion_threshold) == (4, 16, 1.0)
    assert resolve_plan(Settings(max_denoising_steps=8), {"steps": 4}).max_denoising_steps == 8


@pytest.mark.parametrize("name", DEMO_NAMES)
def test_every_block_takes_several_steps_at_the_demo_defaults(name):
    model = engine.load(str(DEMO_ROOT / name))
    for prompt, intent in PROMPTS.items():
        steps: dict[int, int] = {}
        first_accepted: dict[int, float] = {}
        committed: list[tuple[int, int, int]] = []
        finished = None
        for event in engine.generate(model, messages=[{"role": "user", "content": prompt}]):
            if isinstance(event, Step):
                steps[event.block] = steps.get(event.block, 0) + 1
                if event.step == 0:
                    first_accepted[event.block] = event.newly_accepted / len(event.canvas)
            elif isinstance(event, BlockCommitted):
                committed.append(block_record(event))
            elif isinstance(event, Finished):
                finished = event
        assert finished.content.strip() == chat_answer(intent, model.family), prompt
        assert full_blocks_under_three_steps(committed) == 0, (prompt, committed)
        assert [taken for taken, _, _ in committed] == [steps[b] for b in sorted(steps)]
        # What the count leaves out is only LLaDA-2's first block, which holds the prompt's tail.
        partial = [i for i, (_, filled, length) in enumerate(committed) if filled < length]
        assert partial == ([0] if model.family == "llada2_moe" else []), (prompt, committed)
        # LLaDA-2's first block also holds the prompt's tail: only its few masked positions are denoised.
        watched = sorted(steps)[1:] if model.family == "llada2_moe" else sorted(steps)
        assert watched and all(steps[b] >= 3 for b in watched), (prompt, steps)
        assert all(first_accepted[b] <= 0.5 for b in watched), (prompt, first_accepted)


@pytest.mark.parametrize("name", DEMO_NAMES)
def test_the_panel_defaults_follow_the_generation_config(name):
    model = engine.load(str(DEMO_ROOT / name))
    defaults = model.info().setting_defaults     # what the sampler panel shows as each field's default
    generation = model.generation_config
    if model.family == "diffusion_gemma":
        assert defaults["max_denoising_steps"] == generation["max_denoising_steps"]
        assert defaults["t_max"] == generation["t_max"]
    else:
        assert defaults["max_denoising_steps"] == generation["steps"]
        assert defaults["diffusion_threshold"] == generation["threshold"]
        assert defaults["max_transfer_per_step"] == generation["max_transfer_per_step"]


@pytest.mark.parametrize("prompt", ["Translate 'thank you' into Spanish.", "tldr of the french revolution pls"])
def test_llada2_demo_resolves_a_few_unsure_answer_positions_one_at_a_time(prompt):
    """The demo is unsure between its two lines at the first answer block of these prompts (no position above the
    0.9 threshold). Committed together, as the uncapped 4-a-step schedule did, unsure positions mixed the lines
    ("Y'm re welcome! I'm only a tiny LLunA-2 demo model.", bench/README.md, "Ninth pass"). Now the first step
    commits only the surest of them and the rest follow, seeing it: one whole line, the right one (the about line).
    (The ninth pass's prompts, "thx so much" with and without "!!", stopped being unsure once the demo read its
    prompts in word pieces: "Nineteenth pass"; the nineteenth's, "explain quantum computing in one sentence" and
    "tell me about yourself, what kind of assistant are you", once it had trained on more mashing: "Twentieth
    pass"; the twentieth's, "fix my sql pls: SELEC * FROM users" and "So knock knock 😁", once it learnt to edit:
    "Twenty-first pass"; the first panel's "Recommend a good book.", once it trained on built praise and got it wrong:
    "Twenty-third pass". These are the second panel's one and the fourth's.)"""
    model = engine.load(str(DEMO_ROOT / "llada2-demo"))
    first_block = []
    for event in engine.generate(model, messages=[{"role": "user", "content": prompt}]):
        if isinstance(event, Step) and event.block == 0:
            first_block.append(event.newly_accepted)
        elif isinstance(event, Finished):
            finished = event
    assert finished.content.strip() == chat_answer("identity", model.family)
    assert first_block[0] == 1 and len(first_block) > 1, first_block


def test_only_full_blocks_are_held_to_three_steps():
    """LLaDA-2's official schedule moves block_length / steps positions a step, so a first block that shares the
    prompt's tail and has four or fewer positions left takes one step: the count holds full blocks only."""
    assert full_blocks_under_three_steps([(1, 3, 32), (2, 30, 32), (8, 32, 32)]) == 0
    assert full_blocks_under_three_steps([(2, 32, 32), (1, 16, 16), (3, 32, 32)]) == 2


FORMER_DG_DEFAULTS = engine.Settings(max_denoising_steps=6, t_min=0.16, entropy_bound=0.1)


@pytest.mark.parametrize("prompt", ["Give me a recipe for butter chicken pls", "blorptastic fizzwump"])
def test_diffusion_gemma_demo_settles_an_answer_block_it_is_torn_over(prompt):
    """The demo is torn between its two lines over these (the tenth and eleventh panels': the first two found of the
    thirteen panels' prompts whose answer the former defaults garble, thinking off; the demo bundled before the
    twenty-third pass tore over the sixth's `remind me to call mum at 5pm` and the ninth's instead). Under the
    former defaults' bound of 0.1 nats few positions were kept a step, the rest renoised, and the last step's
    argmax mixed the lines (`You're welcome! I'm oely a tiny…`, `Y'm a tinl DiffusionGemma…`). With 0.5 the
    surest positions of one line are kept and the answer settles on it, whole (bench/README.md, "Twelfth pass")."""
    model = engine.load(str(DEMO_ROOT / "diffusion-gemma-demo"))
    lines = fixed_lines(model.family)
    messages = [{"role": "user", "content": prompt}]
    now = list(engine.generate(model, messages=messages))[-1]
    before = list(engine.generate(model, messages=messages, settings=FORMER_DG_DEFAULTS))[-1]
    assert now.content.strip() in lines, now.content
    assert before.content.strip() not in lines, before.content


def test_diffusion_gemma_demo_schedule_cools_from_hot_over_seven_steps():
    model = engine.load(str(DEMO_ROOT / "diffusion-gemma-demo"))
    config = model.generation_config
    assert (config["max_denoising_steps"], config["sampler_config"]["entropy_bound"]) == (7, 0.5)
    temperatures = [float(linear_temperature(7 - k, 7, config["t_min"], config["t_max"])) for k in range(7)]
    assert temperatures[0] == pytest.approx(1.6) and temperatures[-1] == pytest.approx(1.6 / 7)
    assert temperatures == sorted(temperatures, reverse=True)
    assert model.info().setting_defaults["entropy_bound"] == 0.5   # what the sampler panel shows


@pytest.mark.parametrize("name", DEMO_NAMES)
def test_the_bundled_sampler_defaults_are_the_ones_in_code(name):
    """The bundler writes generation_config.json from scripts/demo/demo_config.py; a file edited by hand, or code
    changed without re-writing the file, would show other defaults than bench/README.md measured."""
    import json

    from scripts.demo.demo_config import demo_checkpoint_config

    folder = DEMO_ROOT / name
    family = json.loads((folder / "config.json").read_text())["model_type"]
    assert json.loads((folder / "generation_config.json").read_text()) == demo_checkpoint_config(family)[1]
