"""Word pieces for the demos' prompts (scripts/demo/word_pieces.py): merges learnt from words, a tokenizer that reads
prompts with them while answers stay one character a token, and a trained checkpoint grown to the larger
vocabulary without changing what it already had."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from scripts.demo import word_pieces
from scripts.demo.tasks_chat import ANSWERS
from scripts.demo.curriculum import Example
from scripts.demo.tokenizers import CHARACTERS, answer_ids, load_tokenizer, special_ids, vocabulary, write_tokenizer

THANKS_MERGES = [("t", "h"), ("a", "n"), ("th", "an"), ("than", "k"), ("thank", "s")]


def tokenizer_with(tmp_path, merges, family="llada2_moe"):
    folder = tmp_path / ("pieces" if merges else "plain")
    write_tokenizer(folder, family, merges)
    return load_tokenizer(folder, family)


def test_learnt_merges_follow_frequency_stay_inside_words_and_are_deterministic():
    texts = ["thanks!! thanks, thanks.", "thank you", "ok thanks 🙏", "naïve naïve naïve"]
    merges = word_pieces.learn_merges(texts, 6, CHARACTERS)
    assert merges == word_pieces.learn_merges(list(reversed(texts)), 6, CHARACTERS)
    assert merges[0] in {("t", "h"), ("h", "a"), ("a", "n"), ("n", "k")}   # the pairs every "thank" has
    assert "thanks" in word_pieces.pieces_of(merges)
    for left, right in merges:   # no punctuation, no space mark, nothing from a word with a byte-fallback letter
        assert (left + right).isalnum() and "ï" not in left + right


def test_learning_stops_when_no_pair_repeats():
    assert word_pieces.learn_merges(["abc"], 10, CHARACTERS) == []
    assert word_pieces.learn_merges(["abab abab xy"], 10, CHARACTERS) == [("a", "b"), ("ab", "ab")]


def test_a_tokenizer_with_pieces_reads_the_word_as_one_token_and_keeps_every_other_id(tmp_path):
    plain, pieces = tokenizer_with(tmp_path, []), tokenizer_with(tmp_path, THANKS_MERGES)
    base = vocabulary("llada2_moe")
    assert vocabulary("llada2_moe", THANKS_MERGES)[:len(base)] == base
    assert special_ids("llada2_moe")["mask"] == pieces.id_of("<|mask|>") == plain.id_of("<|mask|>")
    text = "ok thanks 🙏 THANKS"
    ids = pieces.encode_text(text)
    assert pieces.id_of("thanks") in ids and pieces.id_of("thanks") >= len(base)
    assert len(ids) < len(plain.encode_text(text))
    assert pieces.decode(ids) == plain.decode(plain.encode_text(text)) == text
    # The chat prompt the app sends is read with the pieces too.
    assert pieces.id_of("thanks") in pieces.encode_chat([{"role": "user", "content": text}])


def test_answers_are_spelt_one_character_a_token_whatever_the_merges(tmp_path):
    plain, pieces = tokenizer_with(tmp_path, []), tokenizer_with(tmp_path, THANKS_MERGES)
    text = "thanks, I'm glad 🙏 — THANKS"
    assert word_pieces.spell(text, plain) == plain.encode_text(text)
    assert word_pieces.spell(text, pieces) == plain.encode_text(text)
    example = Example(task="chat", messages=({"role": "user", "content": "thanks"},), think=False, reasoning="",
                      answer=ANSWERS["thanks"].format(label="LLaDA-2") + " thanks", subtask="thanks")
    assert answer_ids(example, pieces) == answer_ids(example, plain)


def test_grown_vocabulary_keeps_the_old_rows_and_reads_a_piece_as_its_letters():
    rng = np.random.default_rng(0)
    embeddings, head = rng.normal(size=(10, 4)).astype(np.float32), rng.normal(size=(10, 4)).astype(np.float32)
    grown_in, grown_out = word_pieces.grow_vocabulary(embeddings, head, [[1, 2], [3, 4, 5]], quiet_row=7)
    assert grown_in.shape == grown_out.shape == (12, 4) and grown_in.dtype == np.float32
    assert np.array_equal(grown_in[:10], embeddings) and np.array_equal(grown_out[:10], head)
    assert np.allclose(grown_in[10], embeddings[[1, 2]].mean(axis=0))
    assert np.allclose(grown_in[11], embeddings[[3, 4, 5]].mean(axis=0))
    assert np.array_equal(grown_out[10], head[7]) and np.array_equal(grown_out[11], head[7])
    with pytest.raises(ValueError, match="disagree"):
        word_pieces.grow_vocabulary(embeddings, head[:, :3], [[1]], quiet_row=7)


def test_grow_checkpoint_appends_rows_only_when_the_network_has_more():
    base = len(vocabulary("llada2_moe"))
    grown_size = len(vocabulary("llada2_moe", THANKS_MERGES))
    arrays = {"model.word_embeddings.weight": np.ones((base, 4), np.float32),
              "lm_head.weight": np.zeros((base, 4), np.float32), "model.norm.weight": np.ones(4, np.float32)}
    own = {"model.word_embeddings.weight": np.zeros((grown_size, 4)), "lm_head.weight": np.zeros((grown_size, 4)),
           "model.norm.weight": np.ones(4)}
    grown = word_pieces.grow_checkpoint(arrays, own, "llada2_moe", THANKS_MERGES)
    assert grown["model.word_embeddings.weight"].shape == (grown_size, 4)
    assert grown["lm_head.weight"].shape == (grown_size, 4)
    assert grown["model.norm.weight"] is arrays["model.norm.weight"]
    assert word_pieces.grow_checkpoint(arrays, {k: np.asarray(v) for k, v in arrays.items()}, "llada2_moe",
                                       THANKS_MERGES) is arrays
    with pytest.raises(ValueError, match="cannot grow"):
        word_pieces.grow_checkpoint(arrays, own, "llada2_moe", THANKS_MERGES[:2])


def test_a_tied_table_grows_one_row_per_piece_that_reads_and_scores_it():
    # DiffusionGemma writes through its input embeddings: no head to grow, and two tables that disagree cannot be.
    rng = np.random.default_rng(1)
    embeddings = rng.normal(size=(10, 4)).astype(np.float32)
    grown, head = word_pieces.grow_vocabulary(embeddings, None, [[1, 2]], quiet_row=7)
    assert head is None and grown.shape == (11, 4) and np.array_equal(grown[:10], embeddings)
    assert np.allclose(grown[10], embeddings[[1, 2]].mean(axis=0))
    base = len(vocabulary("diffusion_gemma"))
    grown_size = len(vocabulary("diffusion_gemma", THANKS_MERGES))
    table = rng.normal(size=(base, 4)).astype(np.float32)
    arrays = {"model.decoder.embed_tokens.weight": table, "model.decoder.norm.weight": np.ones(4, np.float32)}
    own = {"model.decoder.embed_tokens.weight": np.zeros((grown_size, 4)), "model.decoder.norm.weight": np.ones(4)}
    out = word_pieces.grow_checkpoint(arrays, own, "diffusion_gemma", THANKS_MERGES)
    assert set(out) == set(arrays) and out["model.decoder.embed_tokens.weight"].shape == (grown_size, 4)
    index = {token: i for i, token in enumerate(vocabulary("diffusion_gemma", THANKS_MERGES))}
    assert np.allclose(out["model.decoder.embed_tokens.weight"][index["thanks"]],
                       table[[index[c] for c in "thanks"]].mean(axis=0))
    with pytest.raises(ValueError, match="one embedding table"):
        word_pieces.grow_checkpoint(arrays | {"model.encoder.embed_tokens.weight": table}, own, "diffusion_gemma",
                                    THANKS_MERGES)


def test_a_run_keeps_how_it_reads_prompts(tmp_path, monkeypatch):
    monkeypatch.setattr(word_pieces, "PROMPTS_PER_KIND", 200)
    assert word_pieces.reading_for_run(tmp_path / "none", 0, False) == ([], False)
    assert not (tmp_path / "none").exists()
    learnt, lowercase = word_pieces.reading_for_run(tmp_path / "run", 64, False)
    assert len(learnt) == 64 and not lowercase
    assert any(piece != piece.lower() for piece in word_pieces.pieces_of(learnt))   # "HI", "Hey": case noise
    stored = json.loads((tmp_path / "run" / word_pieces.RUN_FILE).read_text())
    assert stored["pieces"] == list(word_pieces.pieces_of(learnt))
    # Resumed: the tokenizer it trained with, whatever the options say now.
    assert word_pieces.reading_for_run(tmp_path / "run", 5, True) == (learnt, False)
    folded, lowercase = word_pieces.reading_for_run(tmp_path / "folded", 64, True)
    assert lowercase and all(piece == piece.lower() for piece in word_pieces.pieces_of(folded))
    assert word_pieces.reading_for_run(tmp_path / "only-case", 0, True) == ([], True)


def test_a_fine_tune_reads_prompts_as_the_checkpoint_it_starts_from(tmp_path):
    write_tokenizer(tmp_path / "start", "llada2_moe", THANKS_MERGES)
    assert word_pieces.reading_for_run(tmp_path / "a", 0, False, tmp_path / "start") == (THANKS_MERGES, False)
    assert word_pieces.reading_for_run(tmp_path / "b", 0, True, tmp_path / "start") == (THANKS_MERGES, True)
    with pytest.raises(ValueError, match="already reads prompts with 5 word pieces"):
        word_pieces.reading_for_run(tmp_path / "c", 16, False, tmp_path / "start")
    write_tokenizer(tmp_path / "plain", "llada2_moe")
    assert word_pieces.reading_for_run(tmp_path / "d", 0, False, tmp_path / "plain") == ([], False)
    assert not (tmp_path / "d").exists()


def test_a_lowercasing_tokenizer_reads_any_case_alike_and_answers_keep_theirs(tmp_path):
    plain = tokenizer_with(tmp_path, [])
    write_tokenizer(tmp_path / "folded", "llada2_moe", THANKS_MERGES, lowercase=True)
    folded = load_tokenizer(tmp_path / "folded", "llada2_moe")
    assert folded.encode_text("THANKS a Lot") == folded.encode_text("thanks a lot")
    assert folded.id_of("thanks") in folded.encode_text("THANKS")
    text = "You're welcome! I'm only a tiny LLaDA-2 demo model. THANKS 🙏"
    assert word_pieces.spell(text, folded) == plain.encode_text(text)
    assert folded.decode(word_pieces.spell(text, folded)) == text


def grown_from_plain(tmp_path, family):
    """(plain run, grown run, the grown run's output): a tiny `family` network trained 2 steps, then grown at a
    learning rate of 0 to THANKS_MERGES, read lower-cased."""
    from tests.test_demo_trainer import train, train_python

    if train_python() is None:
        pytest.skip("no PyTorch environment")
    plain = tmp_path / "plain"
    train(plain, family, "--stop-at", "2", "--workers", "0")
    grown = tmp_path / "grown"
    grown.mkdir()
    (grown / word_pieces.RUN_FILE).write_text(json.dumps({"merges": THANKS_MERGES, "lowercase": True}))
    out = train(grown, family, "--init-from", str(plain / "model"), "--stop-at", "1", "--workers", "0",
                "--lr", "0", "--min-lr", "0", "--weight-decay", "0")
    return plain, grown, out


def test_the_trainer_grows_a_checkpoint_to_word_pieces_and_the_engine_runs_it(tmp_path):
    from tests.test_demo_trainer import train, train_python
    import engine
    from safetensors.numpy import load_file

    plain, grown, out = grown_from_plain(tmp_path, "llada2_moe")
    assert "weights from" in out
    config = json.loads((grown / "model" / "config.json").read_text())
    assert config["vocab_size"] == len(vocabulary("llada2_moe", THANKS_MERGES))
    before, after = load_file(str(plain / "model" / "model.safetensors")), \
        load_file(str(grown / "model" / "model.safetensors"))
    rows = before["model.word_embeddings.weight"].shape[0]
    assert np.array_equal(after["model.word_embeddings.weight"][:rows], before["model.word_embeddings.weight"])
    assert after["lm_head.weight"].shape[0] == config["vocab_size"]
    model = engine.load(str(grown / "model"))
    assert model.tokenizer.encode_text("THANKS") == model.tokenizer.encode_text("thanks")
    finished = list(engine.generate(model, messages=[{"role": "user", "content": "thanks"}],
                                    settings=engine.Settings(max_tokens=8)))[-1]
    assert finished.stats.generated_tokens >= 1
    # A fine-tune of it reads as it was trained to (same pieces, same case folding), so at a learning rate of 0
    # it answers alike; asking it for pieces again is refused in one line.
    again = tmp_path / "again"
    train(again, "llada2_moe", "--init-from", str(grown / "model"), "--stop-at", "1", "--workers", "0",
          "--lr", "0", "--min-lr", "0", "--weight-decay", "0")
    assert word_pieces.reading_of_checkpoint(again / "model") == (THANKS_MERGES, True)
    settings = engine.Settings(temp=0.0, max_tokens=12)
    models = [engine.load(str(folder)) for folder in (grown / "model", again / "model")]
    for prompt in ("THANKS", "hi there"):
        answers = [list(engine.generate(model, messages=[{"role": "user", "content": prompt}],
                                        settings=settings))[-1].content for model in models]
        assert answers[0] == answers[1], prompt
    result = subprocess.run([train_python(), "-m", "scripts.demo.train", "--family", "llada2_moe", "--out",
                             str(tmp_path / "twice"), "--init-from", str(grown / "model"), "--size", "tiny",
                             "--steps", "1", "--eval-every", "0", "--workers", "0", "--word-pieces", "8"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "already reads prompts with 5 word pieces" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_trainer_grows_a_diffusion_gemma_checkpoint_and_the_engine_runs_it(tmp_path):
    import engine
    from safetensors.numpy import load_file

    plain, grown, _ = grown_from_plain(tmp_path, "diffusion_gemma")
    config = json.loads((grown / "model" / "config.json").read_text())
    assert config["text_config"]["vocab_size"] == len(vocabulary("diffusion_gemma", THANKS_MERGES))
    name = "model.decoder.embed_tokens.weight"
    before, after = load_file(str(plain / "model" / "model.safetensors")), \
        load_file(str(grown / "model" / "model.safetensors"))
    rows = before[name].shape[0]
    assert after[name].shape[0] == config["text_config"]["vocab_size"]
    assert np.array_equal(after[name][:rows], before[name])
    assert not any("lm_head" in key for key in after)
    model = engine.load(str(grown / "model"))
    assert model.tokenizer.encode_text("THANKS") == model.tokenizer.encode_text("thanks") == [rows + 4]
    finished = list(engine.generate(model, messages=[{"role": "user", "content": "Thanks!"}],
                                    settings=engine.Settings(max_tokens=8)))[-1]
    assert finished.stats.generated_tokens >= 1


def test_the_model_card_says_how_the_tokenizer_reads_prompts(tmp_path):
    from scripts.demo.bundle import tokenizer_text

    for merges, lowercase, words in (([], False, "a character-level tokenizer"),
                                     (THANKS_MERGES, False, "reads prompts with 5 word pieces"),
                                     (THANKS_MERGES, True, "reads prompts lower-cased, with 5 word pieces")):
        folder = tmp_path / f"{len(merges)}-{lowercase}"
        write_tokenizer(folder, "llada2_moe", merges, lowercase)
        assert words in tokenizer_text(folder)


def test_the_first_step_probe_scores_the_lines_as_the_demo_writes_them(tmp_path):
    from scripts.demo.first_step_probe import answer_lines

    plain, pieces = tokenizer_with(tmp_path, []), tokenizer_with(tmp_path, THANKS_MERGES)
    lines = answer_lines(pieces)
    assert lines == answer_lines(plain) and len(lines) == 2 and lines[0] != lines[1]
    assert lines[0][:7] == plain.encode_text("You're ")
