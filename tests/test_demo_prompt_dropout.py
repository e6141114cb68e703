"""The LLaDA-2 trainer's prompt dropout (`--prompt-dropout`): characters of the user's message hidden behind
`<|mask|>`, never the chat template's tokens and never a loss position, drawn after the answer's own noise."""

from __future__ import annotations


import pytest

torch = pytest.importorskip("torch")

from scripts.demo import batches  # noqa: E402
from scripts.demo.tokenizers import load_tokenizer, special_ids, write_tokenizer  # noqa: E402
from scripts.demo.curriculum import Example  # noqa: E402
from demo_trainer_helpers import check_llada_only_share, tiny_llada_first_batch  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tokenizer")
    write_tokenizer(folder, "llada2_moe")
    return load_tokenizer(folder, "llada2_moe")


def encoded(tokenizer, prompt: str, answer: str) -> batches.Encoded:
    example = Example(task="chat", messages=({"role": "user", "content": prompt},), think=False, reasoning="",
                      answer=answer, subtask="thanks", template=prompt)
    ids, answer_ids = batches.encode_example(example, tokenizer)
    return batches.Encoded(ids, answer_ids, "chat")


def test_the_user_text_span_is_the_message_and_nothing_of_the_template(tokenizer):
    ids = tokenizer.encode_chat([{"role": "user", "content": "much obliged"}], think=False)
    start, end = batches.user_text_span(ids, tokenizer.id_of("</role>"), tokenizer.id_of("<|role_end|>"))
    assert tokenizer.decode(ids[start:end]) == "much obliged"
    assert batches.user_text_span([5, 6, 7], 3, 4) == (0, 0)


def test_dropout_hides_only_message_characters_and_leaves_the_answer_noise_as_it_was(tokenizer):
    ids = special_ids("llada2_moe")
    roles = (ids["role_close"], ids["role_end"])
    group = [encoded(tokenizer, "thanks a lot, really " + "x" * i, "You're welcome!") for i in range(8)]

    def batch(dropout: float) -> batches.LLaDABatch:
        return batches.llada_batch(group, 32, ids["eos"], ids["mask"], torch.Generator().manual_seed(3),
                                   prompt_dropout=dropout, roles=roles)

    plain, dropped = batch(0.0), batch(0.5)
    assert torch.equal(plain.masked, dropped.masked) and torch.equal(plain.clean, dropped.clean)
    changed = plain.noisy != dropped.noisy
    assert torch.equal(changed, dropped.context != dropped.clean)   # the same characters, prefix and noisy stream
    assert plain.context is None   # without dropout the prefix is the clean sequence itself
    assert bool((dropped.noisy[changed] == ids["mask"]).all())
    assert not bool((changed & plain.masked).any())          # no loss position changes
    for row, example in enumerate(group):
        start, end = batches.user_text_span(example.prompt, *roles)
        hidden = changed[row].nonzero().flatten().tolist()
        assert hidden and all(start <= i < end for i in hidden)
    share = float(changed.sum()) / sum(end - start for start, end in
                                       (batches.user_text_span(e.prompt, *roles) for e in group))
    assert 0.35 < share < 0.65


def test_the_option_is_llada2_only_and_a_probability(capsys):
    check_llada_only_share("--prompt-dropout", "prompt_dropout", capsys)


def test_the_trainer_passes_its_prompt_dropout_to_the_batches_and_encodes_the_prefix_from_them(tmp_path):
    trainer, prepared = tiny_llada_first_batch(tmp_path, "--prompt-dropout", "0.3")
    batch = prepared.batch
    mask = special_ids("llada2_moe")["mask"]
    prompt_side = torch.arange(batch.clean.shape[1])[None, :] < torch.tensor(batch.prompt_lengths)[:, None]
    before_first_block = torch.arange(batch.clean.shape[1])[None, :] < (
        torch.tensor(batch.prompt_lengths)[:, None] // 32 * 32)
    assert bool(((batch.context == mask) & prompt_side).any())
    assert bool(((batch.context == mask) & before_first_block).any())   # reach the answer only via the prefix
    with torch.no_grad():
        hidden = float(trainer._llada_loss(prepared)[0])
        batch.context = None
        shown = float(trainer._llada_loss(prepared)[0])
    assert hidden != shown
