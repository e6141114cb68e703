"""The demo models' curriculum (scripts/demo): answers and the held-out split (tokenizers and chat formats:
test_demo_tokenizers.py)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from scripts.demo import curriculum as cur
from scripts.demo import tasks_arithmetic, tasks_chat
from scripts.demo.heldout import fixed_words, is_heldout_tuple, is_heldout_word, words_for
from scripts.demo.words import load_words

FAMILIES = ("diffusion_gemma", "llada2_moe")
SPLITS = ("train", "heldout")
N = 4000   # samples per split for the split-leak scans (each sample is ~50 µs)


def mixture(split: str, n: int = N, seed: int = 11, family: str = "diffusion_gemma", think_probability=0.0):
    rng = random.Random(seed)
    return [cur.sample_mixture(rng, split, family=family, think_probability=think_probability) for _ in range(n)]


@pytest.fixture(scope="module")
def samples():
    return {split: mixture(split) for split in SPLITS}


# ---- templates as regular expressions: which phrasing produced a prompt --------------------------------------


_SLOTS = {"a": r"\d+", "b": r"\d+", "s": r"\d+", "n": r"\d+|two|three|four|five", "word": "[a-z]+",
          "letter": "[a-z]", "items": "[a-z0-9][a-z0-9, ]*?", "text": "[A-Za-z][A-Za-z .]*?"}


def _template_regex(template: str) -> re.Pattern:
    """Inverse of phrasing.render: each placeholder matches what it may hold, the first letter either case,
    and a final ?.! may be missing."""
    parts = re.split(r"(\{\w+\})", template)
    body = "".join(f"({_SLOTS[p[1:-1]]})" if re.fullmatch(r"\{\w+\}", p) else re.escape(p) for p in parts)
    first = template[0]
    if first.isalpha():
        body = f"[{first.lower()}{first.upper()}]" + body[len(re.escape(first)):]
    if template[-1] in "?.!":
        body += "?"
    return re.compile(body, re.DOTALL)


ALL_TEMPLATES = {split: [(task, sub, t, _template_regex(t)) for task, subs in cur.PHRASINGS.items()
                         for sub, p in subs.items() for t in p.of(split)] for split in SPLITS}


def _values(template: str, prompt: str) -> dict[str, str]:
    names = re.findall(r"\{(\w+)\}", template)
    match = _template_regex(template).fullmatch(prompt)
    assert match, (template, prompt)
    return dict(zip(names, match.groups()))


def _user_turns(example):
    return [m["content"] for m in example.messages if m["role"] == "user"]


def _forms(prompt: str) -> set[str]:
    """A prompt as written, and without the filler / smiley a training chat prompt may carry (tasks_chat; also
    in earlier turns of other tasks' examples). Both: "Hey, " also begins a greeting template."""
    bare = prompt.removesuffix(tasks_chat.SMILEY)
    filler = next((f for f in tasks_chat.FILLERS if bare.startswith(f)), "")
    return {prompt, bare, bare[len(filler):]}


# ---- determinism and validity ---------------------------------------------------------------------------------


def test_same_seed_same_examples_other_seed_others():
    for family in FAMILIES:
        assert mixture("train", 200, 5, family) == mixture("train", 200, 5, family)
        assert mixture("train", 200, 5, family) != mixture("train", 200, 6, family)
    assert cur.heldout_examples("sorting", 30, family="llada2_moe") == cur.heldout_examples("sorting", 30, family="llada2_moe")
    assert cur.heldout_examples("sorting", 30, family="llada2_moe", seed=1) != cur.heldout_examples("sorting", 30, family="llada2_moe")


def test_heldout_examples_share_prompts_across_families_and_thinking():
    plain = cur.heldout_examples("arithmetic", 20, family="llada2_moe")
    thinking = cur.heldout_examples("arithmetic", 20, family="diffusion_gemma", think=True)
    assert [_user_turns(e) for e in plain] == [_user_turns(e) for e in thinking]   # history chat answers name the family
    assert [e.answer for e in plain] == [e.answer for e in thinking]
    assert all(e.reasoning for e in thinking) and not any(e.reasoning for e in plain)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("task", cur.TASKS)
def test_every_task_split_family_gives_valid_examples(task, split, family):
    rng = random.Random(3)
    thinks = (False, True) if family == "diffusion_gemma" else (False,)
    for i in range(60):
        think = thinks[i % len(thinks)]
        ex = cur.sample(rng, task, split, family=family, think=think)
        assert ex.task == task and ex.think == think and ex.subtask in cur.SUBTASKS[task]
        assert ex.template in cur.PHRASINGS[task][ex.subtask].of(split)
        roles = [m["role"] for m in ex.messages]
        assert roles[-1] == "user" and all(isinstance(m["content"], str) and m["content"] for m in ex.messages)
        body = roles[1:] if roles[0] == "system" else roles
        assert body == ["user", "assistant"] * (len(body) // 2) + ["user"]
        assert ex.answer and ex.answer == ex.answer.strip()
        if think:
            assert ex.reasoning and ex.reasoning == ex.reasoning.strip() and "\n" not in ex.reasoning
            assert len(ex.reasoning) <= 200
        else:
            assert ex.reasoning == ""
        for message in ex.messages[:-1]:
            assert "<|channel>" not in message["content"]


def test_thinking_is_refused_for_llada2_and_bad_arguments_raise():
    with pytest.raises(ValueError):
        cur.sample(random.Random(0), "words", "train", family="llada2_moe", think=True)
    with pytest.raises(ValueError):
        cur.sample_mixture(random.Random(0), "train", family="llada2_moe", think_probability=0.5)
    with pytest.raises(ValueError):
        cur.sample(random.Random(0), "words", "test", family="llada2_moe")
    with pytest.raises(ValueError):
        cur.sample(random.Random(0), "poetry", "train", family="llada2_moe")
    with pytest.raises(ValueError):
        cur.sample(random.Random(0), "words", "train", family="gpt")


def test_mixture_covers_every_task_and_context_variety(samples):
    train = samples["train"]
    assert {e.task for e in train} == set(cur.TASKS)
    with_system = sum(e.messages[0]["role"] == "system" for e in train) / len(train)
    with_history = sum(any(m["role"] == "assistant" for m in e.messages) for e in train) / len(train)
    assert 0.06 < with_system < 0.14 and 0.11 < with_history < 0.19
    for e in train:
        for m in e.messages:
            if m["role"] == "system":
                assert m["content"] in cur.SYSTEM_PROMPTS


# ---- answers checked by independent computation ---------------------------------------------------------------

_MUL_SIGNS = ("×", "times", "*", " x ", "multiply", "product", "multiplied")


def test_arithmetic_answers_match_the_prompt():
    rng = random.Random(8)
    for split in SPLITS:
        for _ in range(600):
            ex = cur.sample(rng, "arithmetic", split, family="diffusion_gemma", think=True)
            values = _values(ex.template, _user_turns(ex)[-1])
            a, b = int(values["a"]), int(values["b"])
            expected = {"add": (a + b, "+"), "subtract": (a - b, "-"), "multiply": (a * b, "×")}[ex.subtask]
            assert ex.answer == f"{a} {expected[1]} {b} = **{expected[0]}**"
            assert any(s in ex.template.lower() for s in _MUL_SIGNS) == (ex.subtask == "multiply")
            assert ex.reasoning.endswith(f"{expected[0]}.")
            _check_worked(ex.subtask, a, b, ex.reasoning)


def _check_worked(op, a, b, reasoning):
    if op == "multiply":   # "47 × 385 = 47 × 300 + ... = 14100 + ... = 18095." : every side is the product
        chain = reasoning.split(",")[0].rstrip(".").split(" = ")
        assert all(eval(side.replace("×", "*")) == a * b for side in chain), reasoning
        return
    for x, sign, y, carry, total in re.findall(r"(\d+) ([+-]) (\d+)(?: \+ (\d))? = (\d+)", reasoning):
        value = int(x) + int(y) + int(carry or 0) if sign == "+" else int(x) - int(y)
        assert value == int(total), reasoning
    if op == "subtract" and a < b:
        assert reasoning.startswith(f"{a} - {b} is negative: do {b} - {a}.")


def test_arithmetic_reasoning_formats():
    assert tasks_arithmetic.add_steps(47, 385) == (
        "ones: 7 + 5 = 12, write 2, carry 1. tens: 4 + 8 + 1 = 13, write 3, carry 1. hundreds: 0 + 3 + 1 = 4. So 432.")
    assert tasks_arithmetic.subtract_steps(600, 7) == "ones: 10 - 7 = 3, borrow 1. tens: 9 - 0 = 9, borrow 1. hundreds: 5 - 0 = 5. So 593."
    assert tasks_arithmetic.subtract_steps(47, 385).endswith("So 338, and the answer is -338.")
    assert tasks_arithmetic.multiply_steps(47, 385) == "47 × 385 = 47 × 300 + 47 × 80 + 47 × 5 = 14100 + 3760 + 235 = 18095."
    worst = max(len(tasks_arithmetic.worked(op, a, b)) for op in tasks_arithmetic.SUBTASKS
                for a in (0, 9, 99, 100, 909, 999) for b in (0, 9, 10, 99, 101, 999))
    assert worst <= 200


def test_arithmetic_ranges_are_read_at_draw_time(monkeypatch):
    monkeypatch.setattr(tasks_arithmetic, "MUL_FIRST_RANGE", (0, 12))
    monkeypatch.setattr(tasks_arithmetic, "MUL_SECOND_RANGE", (0, 9))
    rng = random.Random(2)
    for _ in range(200):
        a, b = map(int, re.findall(r"\d+", tasks_arithmetic.draw(rng, "train", "llada2_moe", "multiply").answer)[:2])
        assert max(a, b) <= 12 and min(a, b) <= 9


def test_sorting_answers_are_sorted_prompt_items():
    rng = random.Random(9)
    for split in SPLITS:
        for _ in range(400):
            ex = cur.sample(rng, "sorting", split, family="llada2_moe")
            items = [i for i in re.split(r",\s*|\s+and\s+|\s+", _values(ex.template, _user_turns(ex)[-1])["items"]) if i]
            descending = ex.subtask in ("numbers_descending", "words_reverse")
            if ex.subtask.startswith("numbers"):
                assert ex.answer == ", ".join(str(v) for v in sorted(map(int, items), reverse=descending))
            else:
                assert ex.answer == "\n".join("- " + w for w in sorted(items, reverse=descending))
                assert len(set(items)) == len(items)
            assert 2 <= len(items) <= 8


def test_word_counting_repeat_answers():
    from scripts.demo import tasks_words as tw

    assert tw.reverse_answer("planet") == "`tenalp`" and tw.spell_answer("planet") == "p-l-a-n-e-t"
    assert tw.length_answer("planet") == "planet has 6 letters."
    assert tw.letter_count_answer("banana", "a") == "There are 3 a's in banana."
    assert tw.letter_count_answer("banana", "b") == "There is 1 b in banana."
    assert tw.letter_count_answer("banana", "z") == "There are 0 z's in banana."
    rng = random.Random(4)
    for _ in range(300):
        ex = cur.sample(rng, "words", "train", family="diffusion_gemma")
        values = _values(ex.template, _user_turns(ex)[-1])
        word = values["word"]
        if ex.subtask == "reverse":
            assert ex.answer == "`" + "".join(reversed(word)) + "`"
        elif ex.subtask == "spell":
            assert ex.answer.split("-") == list(word)
        elif ex.subtask == "length":
            assert ex.answer == f"{word} has {len(word)} letters."
        else:
            n = sum(c == values["letter"] for c in word)
            assert ex.answer == (f"There is 1 {values['letter']} in {word}." if n == 1
                                 else f"There are {n} {values['letter']}'s in {word}.")
    for _ in range(300):
        ex = cur.sample(rng, "repeat", "train", family="diffusion_gemma")
        values = _values(ex.template, _user_turns(ex)[-1])
        if ex.subtask == "verbatim":
            assert ex.answer == values["text"]
        else:
            n = {"two": 2, "three": 3, "four": 4, "five": 5}.get(values["n"]) or int(values["n"])
            assert ex.answer.split(" ") == values["text"].split(" ") * n and 2 <= n <= 5
    for _ in range(300):
        ex = cur.sample(rng, "counting", "train", family="diffusion_gemma")
        values = _values(ex.template, _user_turns(ex)[-1])
        a, b, s = int(values["a"]), int(values["b"]), int(values.get("s", 1))
        numbers = [int(v) for v in ex.answer.split(", ")]
        assert numbers[0] == a and numbers[-1] == b and 2 <= len(numbers) <= 80 and max(numbers) <= 999
        assert all(abs(y - x) == s and (y > x) == (b > a) for x, y in zip(numbers, numbers[1:]))


def test_chat_answers_are_fixed_honest_and_short():
    for family, label in cur.FAMILY_LABELS.items():
        answers = {}
        for ex in [cur.sample(random.Random(i), "chat", "train", family=family) for i in range(200)]:
            answers.setdefault(ex.subtask, set()).add(ex.answer)
        assert set(answers) == set(cur.SUBTASKS["chat"]) and all(len(a) == 1 for a in answers.values())
        for (text,) in answers.values():
            assert label in text and len(text) < 300
        # Honest: what the demo can do is what its card claims (tasks_chat.SKILLS), nothing more.
        capabilities = next(iter(answers["capabilities"]))
        assert tasks_chat.SKILLS in capabilities and "real model" in capabilities
        assert not any(word in text for (text,) in answers.values() for word in ("arithmetic", "sorting"))


# ---- the held-out split ---------------------------------------------------------------------------------------


def test_phrasing_counts_per_subtask():
    for task, subs in cur.PHRASINGS.items():
        assert set(subs) == set(cur.SUBTASKS[task])
        for sub, p in subs.items():
            assert len(set(p.train)) == len(p.train) >= 10, (task, sub)
            assert len(set(p.heldout)) == len(p.heldout) >= 3, (task, sub)
            assert not set(p.train) & set(p.heldout)


def test_word_list_is_clean_and_about_15_percent_held_out():
    words = load_words()
    assert 2000 <= len(words) <= 4000 and all(re.fullmatch("[a-z]{3,9}", w) for w in words)
    assert not {"sex", "kill", "gun", "stupid", "hell"} & set(words)
    text = (Path(cur.__file__).with_name("words.txt")).read_text()
    assert text.startswith("#") and "scowl" in text.splitlines()[1] and "Copyright" in text
    held = words_for("heldout")
    assert 0.12 < len(held) / len(words) < 0.17
    assert set(held) | set(words_for("train")) == set(words) and not set(held) & set(words_for("train"))
    assert not set(held) & fixed_words()
    assert all(is_heldout_word(w[::-1]) == is_heldout_word(w) for w in words if w[::-1] in words)


def _data_words(example):
    """Every lowercase word of every message, answer and reasoning."""
    text = " ".join([m["content"] for m in example.messages] + [example.answer, example.reasoning])
    return {w.lower() for w in re.findall("[A-Za-z]+", text)}


_ARITH = re.compile(r"(\d+) ([+\-×]) (\d+) = \*\*-?\d+\*\*")
_OPS = {"+": "add", "-": "subtract", "×": "multiply"}


def _tuples(example):
    """(kind, key) of every arithmetic pair, number list and counting range the example's answers hold."""
    found = []
    answers = [m["content"] for m in example.messages if m["role"] == "assistant"]
    for text in answers + [example.answer]:
        match = _ARITH.fullmatch(text)
        if match:
            a, op, b = int(match.group(1)), _OPS[match.group(2)], int(match.group(3))
            found.append((op, (a, b) if op == "subtract" else (min(a, b), max(a, b))))
    for text in answers + [example.answer]:
        if re.fullmatch(r"\d+(, \d+)+", text):
            numbers = [int(v) for v in text.split(", ")]
            if text is example.answer and example.task == "counting":   # history never holds counting
                found.append(("count", (numbers[0], numbers[-1], abs(numbers[1] - numbers[0]))))
            else:
                found.append(("sort", tuple(sorted(numbers))))
    return found


def test_heldout_words_and_tuples_never_in_train_and_only_heldout_in_heldout(samples):
    held_words = set(words_for("heldout"))
    all_words = set(load_words())
    kinds = set()
    for ex in samples["train"]:
        assert not _data_words(ex) & held_words, ex
        for kind, key in _tuples(ex):
            kinds.add(kind)
            assert not is_heldout_tuple(kind, key), (kind, key, ex)
    assert kinds == {"add", "subtract", "multiply", "sort", "count"}
    for ex in samples["heldout"]:
        for kind, key in _tuples(ex):
            assert is_heldout_tuple(kind, key), (kind, key, ex)
        if ex.task in ("words", "repeat") or ex.subtask.startswith("words_"):
            data = {w for w in _data_words(ex) if w in all_words} - fixed_words()
            assert data and data <= held_words, ex


def test_heldout_templates_never_in_train_and_only_heldout_in_heldout(samples):
    for split, other in (("train", "heldout"), ("heldout", "train")):
        for ex in samples[split][:800]:
            assert ex.template in cur.PHRASINGS[ex.task][ex.subtask].of(split)
            for prompt in _user_turns(ex):
                assert any(r.fullmatch(form) for form in _forms(prompt) for *_, r in ALL_TEMPLATES[split]), prompt
                assert not any(r.fullmatch(form) for form in _forms(prompt) for *_, r in ALL_TEMPLATES[other]), prompt
    used = {(e.task, e.subtask, e.template) for e in samples["train"]}
    assert len(used) > 0.9 * len(ALL_TEMPLATES["train"])


def test_examples_in_fixed_answers_are_training_items():
    assert not is_heldout_tuple("add", (47, 385)) and not is_heldout_tuple("sort", (2, 5, 8))
    assert not is_heldout_tuple("count", (7, 20, 1)) and not is_heldout_word("apple")


def test_is_correct_accepts_the_answer_and_rejects_near_misses():
    ex = cur.sample(random.Random(0), "arithmetic", "train", family="diffusion_gemma", subtask="add")
    assert cur.is_correct(ex, ex.answer) and cur.is_correct(ex, f"  \n{ex.answer} \n")
    number = re.search(r"\*\*(-?\d+)\*\*", ex.answer).group(1)
    assert not cur.is_correct(ex, ex.answer.replace(f"**{number}**", f"**{int(number) + 1}**"))
    assert not cur.is_correct(ex, ex.answer.replace("**", ""))
    assert not cur.is_correct(ex, ex.answer + ".")
    words = cur.sample(random.Random(0), "sorting", "train", family="llada2_moe", subtask="words_alphabetical")
    lines = words.answer.split("\n")
    assert not cur.is_correct(words, "\n".join(lines[::-1]))


def test_a_focus_narrows_the_mixture_to_its_tasks_and_sub_tasks():
    focus = cur.parse_focus("arithmetic:add, chat")
    assert focus["arithmetic"] == ("add",) and len(focus["chat"]) > 1
    rng = random.Random(3)
    drawn = {(e.task, e.subtask) for e in (cur.sample_mixture(rng, "train", family="llada2_moe", focus=focus)
                                           for _ in range(300))}
    assert {task for task, _ in drawn} == {"arithmetic", "chat"}
    assert {sub for task, sub in drawn if task == "arithmetic"} == {"add"}
    for bad in ("algebra", "arithmetic:divide"):
        with pytest.raises(ValueError):
            cur.parse_focus(bad)
