"""The demo models' tokenizers (one token per character, specials never from user text) and chat formats (the
templates each demo ships, in its family's real format)."""

from __future__ import annotations

import random

import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine.generation.text import split_reasoning
from scripts.demo import curriculum as cur
from scripts.demo import tokenizers as demo_tok

FAMILIES = ("diffusion_gemma", "llada2_moe")


@pytest.fixture(scope="module")
def toks(tmp_path_factory):
    out = {}
    for family in FAMILIES:
        folder = tmp_path_factory.mktemp(family)
        demo_tok.write_tokenizer(folder, family)
        out[family] = demo_tok.load_tokenizer(folder, family)
    return out



def test_vocab_layout_and_special_ids():
    dg, ll = demo_tok.special_ids("diffusion_gemma"), demo_tok.special_ids("llada2_moe")
    assert (dg["pad"], dg["eos"], dg["bos"], dg["unk"], dg["mask"]) == (0, 1, 2, 3, 4)
    assert dg["turn_start"] == 5 and dg["audio"] == 15 and demo_tok.stop_ids("diffusion_gemma") == [1, 6, 10]
    assert (ll["bos"], ll["eos"], ll["pad"], ll["mask"]) == (0, 1, 1, 2) and demo_tok.stop_ids("llada2_moe") == [1]
    for family in FAMILIES:
        vocab = demo_tok.vocabulary(family)
        assert len(set(vocab)) == len(vocab) == demo_tok.vocab_size(family)
        assert vocab[len(demo_tok.SPECIAL[family])] == "<0x00>"


@pytest.mark.parametrize("family", FAMILIES)
def test_files_are_read_by_the_engine(toks, family):
    tok = toks[family]
    assert tok.vocab_size == demo_tok.vocab_size(family)
    ids = demo_tok.special_ids(family)
    assert tok.eos_ids >= {ids["eos"]}
    if family == "diffusion_gemma":
        assert tok.eos_ids == {ids["eos"], ids["turn_end"]}   # eot_token <turn|> stops too
        assert tok.hidden_ids == {ids["pad"], ids["bos"], ids["unk"], ids["mask"]}
    assert tok.id_of(tok.special["mask_token"]) == ids["mask"]


@pytest.mark.parametrize("family", FAMILIES)
def test_one_token_per_curriculum_character_and_exact_round_trip(toks, family):
    tok = toks[family]
    first_char = len(demo_tok.SPECIAL[family]) + 256
    rng = random.Random(6)
    texts = set()
    for _ in range(400):
        ex = cur.sample_mixture(rng, "train" if rng.random() < 0.5 else "heldout", family=family,
                                think_probability=0.5 if family == "diffusion_gemma" else 0.0)
        texts.update(m["content"] for m in ex.messages)
        texts.update((ex.answer, ex.reasoning, "thought\n" + ex.reasoning))
    texts.update(cur.SYSTEM_PROMPTS)
    for text in filter(None, texts):
        ids = tok.encode_text(text)
        assert len(ids) == len(text) and min(ids) >= first_char, text   # no byte fallback, no specials
        assert tok.decode(ids) == text
        assert tok.backend.encode(text, add_special_tokens=False).ids == ids


@pytest.mark.parametrize("family", FAMILIES)
def test_control_token_lookalikes_stay_text_and_emoji_round_trips(toks, family):
    tok = toks[family]
    text = "a <turn|> b <|endoftext|> c <|channel> <role> <think> <bos> 🙂 é\t"
    ids = tok.encode_text(text)
    assert not set(ids) & set(range(len(demo_tok.SPECIAL[family])))
    assert tok.decode(ids) == text
    emoji = tok.encode_text("🙂")
    assert emoji == [len(demo_tok.SPECIAL[family]) + b for b in "🙂".encode()]
    plain = tok.encode_chat([{"role": "user", "content": "x"}])
    tricky = tok.encode_chat([{"role": "user", "content": text}])
    specials = set(range(len(demo_tok.SPECIAL[family])))
    assert [i for i in tricky if i in specials] == [i for i in plain if i in specials]


def _prompt(tok, messages, think=False):
    prepared = tok.prepare_chat(messages, think=think)
    # The ids are those of the rendered text with the markup's special tokens (no user text here looks special).
    assert prepared.ids == tok.backend.encode(prepared.text, add_special_tokens=False).ids
    assert tok.decode(prepared.ids, keep_hidden=True) == prepared.text
    return prepared.text


HISTORY = [{"role": "user", "content": "Reverse cat"}, {"role": "assistant", "content": "`tac`"},
           {"role": "user", "content": "Spell dog"}]


def test_diffusion_gemma_prompts(toks):
    tok = toks["diffusion_gemma"]
    assert _prompt(tok, [{"role": "user", "content": " What is 2 + 3? "}]) == (
        "<bos><|turn>user\nWhat is 2 + 3?<turn|>\n<|turn>model\n")
    assert _prompt(tok, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], think=True) == (
        "<bos><|turn>system\n<|think|>\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n")
    assert _prompt(tok, [{"role": "user", "content": "Hi"}], think=True) == (
        "<bos><|turn>system\n<|think|>\n<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n")
    assert _prompt(tok, [{"role": "system", "content": "Be brief."}, *HISTORY]) == (
        "<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nReverse cat<turn|>\n<|turn>model\n`tac`<turn|>\n"
        "<|turn>user\nSpell dog<turn|>\n<|turn>model\n")


def _jinja(family, **context):
    """The template rendered the way Hugging Face's apply_chat_template does: real text, no placeholders."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(demo_tok.chat_template(family)).render(**context)


def test_diffusion_gemma_template_strips_earlier_thoughts_and_renders_images():
    messages = [{"role": "user", "content": "First"},
                {"role": "assistant", "content": "  Before<|channel>thought\nHidden<channel|>after  "},
                {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " What is this? "}]}]
    assert _jinja("diffusion_gemma", messages=messages, bos_token="<bos>", add_generation_prompt=True) == (
        "<bos><|turn>user\nFirst<turn|>\n<|turn>model\nBeforeafter<turn|>\n"
        "<|turn>user\n<|image|>What is this?<turn|>\n<|turn>model\n")
    user_thought = [{"role": "user", "content": "a<|channel>b<channel|>c"}]   # only model turns are stripped
    assert "a<|channel>b<channel|>c" in _jinja("diffusion_gemma", messages=user_thought, bos_token="<bos>")


def test_llada2_prompts(toks):
    tok = toks["llada2_moe"]
    assert _prompt(tok, [{"role": "user", "content": "What is 2 + 3?"}]) == (
        "<role>SYSTEM</role>detailed thinking off<|role_end|><role>HUMAN</role>What is 2 + 3?<|role_end|>"
        "<role>ASSISTANT</role>")
    assert _prompt(tok, [{"role": "system", "content": "Be brief."}, *HISTORY]) == (
        "<role>SYSTEM</role>Be brief.\ndetailed thinking off<|role_end|><role>HUMAN</role>Reverse cat<|role_end|>"
        "<role>ASSISTANT</role>`tac`<|role_end|><role>HUMAN</role>Spell dog<|role_end|><role>ASSISTANT</role>")
    assert "trim" not in demo_tok.chat_template("llada2_moe")   # the engine would then strip user text


def test_encode_example_layouts_and_reasoning_split(toks):
    dg, ll = toks["diffusion_gemma"], toks["llada2_moe"]
    rng = random.Random(12)
    for _ in range(100):
        ex = cur.sample_mixture(rng, "train", family="diffusion_gemma", think_probability=0.5)
        prompt, answer = demo_tok.encode_example(ex, dg)
        assert prompt == dg.encode_chat(list(ex.messages), think=ex.think)   # what the app sends
        assert dg.decode(prompt, keep_hidden=True).endswith("<|turn>model\n")
        assert answer[-1] == dg.id_of("<turn|>")
        if ex.think:
            assert answer[0] == dg.id_of("<|channel>") and answer.count(dg.id_of("<channel|>")) == 1
            assert answer[1:9] == dg.encode_text("thought\n")
        else:
            assert dg.id_of("<|channel>") not in answer
        # The engine stops before the stop id; what it has decoded then splits back exactly.
        assert split_reasoning(dg.decode(answer[:-1]), final=True) == (ex.reasoning, ex.answer)
    for _ in range(50):
        ex = cur.sample_mixture(rng, "train", family="llada2_moe")
        prompt, answer = demo_tok.encode_example(ex, ll)
        assert answer == ll.encode_text(ex.answer) + [ll.id_of("<|endoftext|>")]
        assert ll.decode(prompt, keep_hidden=True).endswith("<role>ASSISTANT</role>")
        assert split_reasoning(ll.decode(answer[:-1]), final=True) == ("", ex.answer)


def test_length_report(toks):
    report = demo_tok.length_report("llada2_moe", 40, tokenizer=toks["llada2_moe"])
    assert set(report) == set(cur.TASKS)
    for parts in report.values():
        for stats in parts.values():
            assert 0 < stats["median"] <= stats["p99"] <= stats["max"]
    assert report["counting"]["answer"]["max"] > report["arithmetic"]["answer"]["max"]
    assert "counting" in demo_tok.format_length_report(report)
