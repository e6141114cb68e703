"""LLaDA-2.1 token editing (M2T + T2T) on hand-built logits: unmask only, edit only, both in one step, the
post-edit phase, the stop rule, the settings (presets, 2.1 checkpoints) and the 2.0 loop when editing is off."""

from __future__ import annotations

from types import SimpleNamespace

import mlx.core as mx
import numpy as np
import pytest
from conftest import CHECKPOINTS

import engine
from engine.events import BlockCommitted, Step
from engine.generation.llada2 import checkpoint_defaults, is_editing_checkpoint, resolve_plan

V, MASK, EOS = 16, 15, 14
PROMPT = [1, 2, 3, 4]   # one whole block of 4: the denoised block has no prompt tail
LOW = (0, 0.3)          # a candidate nothing accepts


def row(token: int, p: float) -> np.ndarray:
    """Logits whose softmax gives `token` probability `p` (and is its argmax when p > 1/V)."""
    logits = np.zeros(V, np.float32)
    logits[token] = np.log(p * (V - 1) / (1 - p))
    return logits


class ScriptedNetwork:
    """Returns the scripted logits of each denoising call in turn: script[call] = [(token, p)] per position."""

    vocab_size, mask_token_id, eos_token_ids, context_length = V, MASK, (EOS,), 32768

    def __init__(self, script):
        self.script = script
        self.inputs: list[list[int]] = []

    def make_cache(self, block_length):
        return SimpleNamespace(offset=0, block_length=block_length)

    def prefill(self, ids, cache, block_length, cancel=None, progress=None):
        cache.offset += ids.shape[1]

    def denoise(self, block_ids, cache):
        self.inputs.append(np.array(block_ids)[0].tolist())
        call = self.script[min(len(self.inputs) - 1, len(self.script) - 1)]
        return mx.array(np.stack([row(*position) for position in call])[None])

    def commit(self, ids, cache):
        cache.offset += ids.shape[1]


def run(script, **settings):
    network = ScriptedNetwork(script)
    tokenizer = SimpleNamespace(decode=lambda ids: " ".join(map(str, ids)), eos_ids=set())
    model = SimpleNamespace(family="llada2_moe", network=network, generation_config={}, tokenizer=tokenizer,
                            name="scripted", path=None)
    options = dict(block_length=4, max_denoising_steps=4, diffusion_threshold=0.9, editing_threshold=0.8,
                   max_post_steps=2, max_tokens=4)
    options.update(settings)
    events = list(engine.generate(model, prompt_ids=PROMPT, settings=engine.Settings(**options)))
    steps = [e for e in events if isinstance(e, Step)]
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    return steps, blocks, network


def test_unmask_only_then_one_post_step_that_edits_nothing_ends_the_block():
    script = [[(7, 0.95), LOW, LOW, LOW], [(7, 0.95), (8, 0.95), LOW, LOW], [(7, 0.95), (8, 0.95), (9, 0.95), LOW],
              [(7, 0.95), (8, 0.95), (9, 0.95), (10, 0.95)]]
    steps, blocks, network = run(script)
    assert [s.newly_accepted for s in steps] == [1, 1, 1, 1, 0]
    assert all(not s.edited.any() for s in steps)
    assert blocks[0].committed == (7, 8, 9, 10) and blocks[0].edits == 0
    assert blocks[0].stop_reason == "edits_settled" and blocks[0].steps == 5
    assert steps[-1].max_steps == 4 + 2


def test_edit_only_in_the_post_phase():
    everything = [(7, 0.95), (8, 0.95), (9, 0.95), (10, 0.95)]
    script = [everything, [(7, 0.95), (8, 0.95), (11, 0.95), (10, 0.95)], [(7, 0.95), (8, 0.95), (11, 0.95), (10, 0.5)]]
    steps, blocks, network = run(script)
    assert steps[0].newly_accepted == 4 and not steps[0].edited.any()
    assert steps[1].edited.tolist() == [False, False, True, False] and steps[1].newly_accepted == 0
    assert steps[1].canvas.tolist() == [7, 8, 11, 10]
    assert network.inputs[2] == [7, 8, 11, 10]   # the next step reads the edited block
    assert blocks[0].committed == (7, 8, 11, 10) and blocks[0].edits == 1
    assert blocks[0].stop_reason == "edits_settled" and blocks[0].steps == 3


def test_unmasking_and_editing_in_the_same_step():
    script = [[(7, 0.95), (8, 0.95), LOW, LOW],
              [(12, 0.85), (8, 0.95), (9, 0.95), (10, 0.95)],   # pos 0 re-written while pos 2, 3 unmask
              [(12, 0.85), (8, 0.95), (9, 0.95), (10, 0.95)]]
    steps, blocks, _ = run(script)
    assert steps[1].edited.tolist() == [True, False, False, False] and steps[1].newly_accepted == 2
    assert steps[1].accepted.all() and steps[1].scores[0] == pytest.approx(0.85, abs=1e-5)
    assert blocks[0].committed == (12, 8, 9, 10) and blocks[0].edits == 1 and blocks[0].steps == 3


def test_the_post_phase_stops_after_max_post_steps():
    flip = [[(7, 0.95), (8, 0.95), (9, 0.95), (10, 0.95)], [(12, 0.95), (8, 0.95), (9, 0.95), (10, 0.95)]]
    script = [flip[0], flip[1], flip[0], flip[1], flip[0]]
    steps, blocks, _ = run(script)
    assert blocks[0].stop_reason == "max_post_steps" and blocks[0].steps == 1 + 2 and blocks[0].edits == 2
    steps0, blocks0, _ = run(script, max_post_steps=0)   # no post step at all
    assert blocks0[0].steps == 1 and blocks0[0].committed == (7, 8, 9, 10)


def test_the_edit_rule_is_strict_and_never_writes_a_mask():
    # Just under the threshold: no edit (exactly at it is a question of float rounding, not of the rule);
    # a mask: never, however confident.
    script = [[(7, 0.95), (8, 0.95), (9, 0.95), (10, 0.95)],
              [(12, 0.7999), (MASK, 0.99), (9, 0.95), (10, 0.95)]]
    steps, blocks, _ = run(script)
    assert not steps[1].edited.any() and blocks[0].committed == (7, 8, 9, 10)
    assert all(MASK not in b.committed for b in blocks)
    script[1][0] = (12, 0.8001)  # just over it: edited
    steps, blocks, _ = run(script)
    assert steps[1].edited.tolist() == [True, False, False, False] and blocks[0].committed == (12, 8, 9, 10)


def test_editing_off_is_the_2_0_loop():
    script = [[(7, 0.95), LOW, LOW, LOW], [(7, 0.99), (8, 0.95), (13, 0.99), LOW]]
    for off in (dict(token_editing=False), dict(editing_threshold=None),
                dict(llada_mode="speed", token_editing=False), dict(editing_threshold=0.0, token_editing=False)):
        steps, blocks, network = run(script, **off)
        assert all(s.edited is None for s in steps) and steps[0].max_steps == 4
        assert blocks[0].stop_reason == "all_positions_revealed" and blocks[0].edits == 0
        assert len(network.inputs) == blocks[0].steps == 3   # no post step
        assert MASK not in blocks[0].committed


def test_presets_and_explicit_settings():
    plan = resolve_plan(engine.Settings(llada_mode="quality"), {})
    assert (plan.diffusion_threshold, plan.editing_threshold, plan.max_post_steps) == (0.7, 0.5, 16)
    # speed is the official S mode: editing on, at threshold 0 (every changed prediction)
    plan = resolve_plan(engine.Settings(llada_mode="speed"), {}, editing_checkpoint=True)
    assert (plan.diffusion_threshold, plan.editing, plan.editing_threshold, plan.max_post_steps) == (0.5, True, 0.0, 16)
    assert not resolve_plan(engine.Settings(llada_mode="speed", token_editing=False), {}).editing
    # a threshold asks for editing, also on a 2.0 checkpoint; off is said only by token_editing
    assert resolve_plan(engine.Settings(editing_threshold=0.0), {}).editing
    assert not resolve_plan(engine.Settings(token_editing=False), {}, editing_checkpoint=True).editing
    # a setting given beside a preset wins
    plan = resolve_plan(engine.Settings(llada_mode="quality", editing_threshold=0.6, diffusion_threshold=0.9), {})
    assert (plan.diffusion_threshold, plan.editing_threshold, plan.diffusion_threshold_end) == (0.9, 0.6, 0.9)
    # defaults: off for 2.0, the 2.1 code's values for 2.1, a checkpoint's own generation_config first
    assert not resolve_plan(engine.Settings(), {}).editing
    assert resolve_plan(engine.Settings(), {}, editing_checkpoint=True).editing_threshold == 0.9
    assert resolve_plan(engine.Settings(), {"editing_threshold": 0.4, "max_post_steps": 3}).max_post_steps == 3
    with pytest.raises(engine.SettingsError, match="unknown LLaDA mode"):
        engine.Settings(llada_mode="fast").validated()
    with pytest.raises(engine.SettingsError, match=r"in \[0, 1\]"):
        engine.Settings(editing_threshold=1.5).validated()


def test_a_2_1_checkpoint_is_known_by_its_name():
    assert is_editing_checkpoint("inclusionAI/LLaDA2.1-mini", None, {})
    assert is_editing_checkpoint("snapshot", "/hf/hub/models--inclusionAI--LLaDA2.1-flash/snapshots/abc", {})
    assert is_editing_checkpoint("my-llada-2_1", None, {})
    assert not is_editing_checkpoint("inclusionAI/LLaDA2.0-mini", "/x/LLaDA2.0-mini", {})
    assert not is_editing_checkpoint("LLaDA2.10", None, {})
    assert is_editing_checkpoint("anything", None, {"editing_threshold": 0.9})
    fixture = engine.load(CHECKPOINTS / "llada2")
    defaults = checkpoint_defaults(fixture)
    assert (defaults["token_editing"], defaults["editing_threshold"]) == (False, 0.9)
    renamed = SimpleNamespace(name="LLaDA2.1-mini", path=fixture.path, generation_config={})
    defaults = checkpoint_defaults(renamed)
    assert (defaults["token_editing"], defaults["editing_threshold"], defaults["max_post_steps"],
            defaults["llada_mode"]) == (True, 0.9, 16, None)


def reference_edit(old, active, x0, p, threshold):
    """The 2.1 code's T2T rule (reference llada2.md §5.7 d): editable = not active (no prompt tail here), and
    an edit where p > editing_threshold and x0 differs from what the position holds."""
    return [not a and pi > threshold and x != o for o, a, x, pi in zip(old, active, x0, p)]


@pytest.mark.parametrize("settings", [dict(editing_threshold=0.0), dict(llada_mode="speed", editing_threshold=None,
                                                                        diffusion_threshold=0.9)])
def test_at_threshold_0_every_filled_position_whose_prediction_changed_is_edited(settings):
    """As the official 2.1 generate() and SGLang's JointThreshold (edit threshold 0): however unsure the new
    prediction (p = 0.07 here), a changed one is written; an unchanged one is not an edit."""
    script = [[(7, 0.95), (8, 0.95), LOW, LOW],
              [(11, 0.07), (8, 0.95), (9, 0.95), (10, 0.95)],    # pos 0 changed, unsure: edited while 2, 3 unmask
              [(11, 0.07), (12, 0.08), (13, 0.2), (10, 0.95)],   # post phase: 1 and 2 changed
              [(11, 0.07), (12, 0.08), (13, 0.2), (10, 0.95)]]   # nothing changes: the block is done
    steps, blocks, _ = run(script, **settings)
    expected = [reference_edit([7, 8, MASK, MASK], [False, False, True, True], [11, 8, 9, 10], [0.07, .95, .95, .95], 0),
                reference_edit([11, 8, 9, 10], [False] * 4, [11, 12, 13, 10], [0.07, 0.08, 0.2, 0.95], 0)]
    assert [s.edited.tolist() for s in steps[1:3]] == expected == [[True, False, False, False],
                                                                   [False, True, True, False]]
    assert blocks[0].committed == (11, 12, 13, 10) and blocks[0].edits == 3
    assert blocks[0].stop_reason == "edits_settled"
    off, blocks_off, _ = run(script, **settings, token_editing=False)
    assert all(s.edited is None for s in off) and blocks_off[0].committed == (7, 8, 9, 10)
