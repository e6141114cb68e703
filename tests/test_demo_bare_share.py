"""The composed data behind the trainer's `--bare-share` (the option itself: test_demo_share_options.py): that
share of the built phrases is the intent's own words alone, with no lead or tail. Without it the bundled LLaDA-2
demo took a thanks word alone for the about line (`much obliged`, `grazie`, `kudos`) though the same word before
`for the help` was thanks every time: the tails had carried the intent. 0 leaves the composed data exactly as it
was (a resumed run's stream must not change)."""

from __future__ import annotations

import hashlib
import random

from scripts.demo import chat_compose, chat_compounds


def prompts(n: int, seed: int, *share: float) -> list[str]:
    rng = random.Random(seed)
    return [chat_compose.example(rng, "train", "llada2_moe", False, 0.0, *share).messages[-1]["content"]
            for _ in range(n)]


def test_no_share_draws_the_composed_data_exactly_as_before():
    # The digest of these 300 prompts as the composed data draws them: a change to the data changes it, a share of
    # 0 must not. 35b5778a6d7bf545 before the option existed (commit 94d9527) and until the twentieth pass's
    # mashing (b4ae7e8: new gibberish patterns, caps lock) redrew the out-of-scope prompts; a9342f383781a529 until
    # the twenty-third pass's built praise and remarks (scripts/demo/chat_praise.py), c6e3214c3bf46a3e until its
    # made-up words, cd00c9699258850c until the twenty-fourth pass's thanks in other languages.
    digest = hashlib.sha256("\n".join(prompts(300, 3, 0.0)).encode()).hexdigest()[:16]
    assert digest == "d50a86a538995e8b"
    assert prompts(300, 3) == prompts(300, 3, 0.0)


def test_a_bare_phrase_is_one_part_that_says_the_intent():
    rng = random.Random(0)
    for intent, (leads, cores, _) in chat_compounds.PARTS.items():
        said = set(leads if intent == "greeting" else cores) - {""}   # written out: what carrier() must give
        built = {chat_compounds.build(rng, intent, 1.0) for _ in range(400)}
        assert built <= said, intent
        assert len(built) > len(said) // 2, intent   # drawn from the whole part, not one word of it


def test_the_share_makes_that_many_built_phrases_bare():
    rng = random.Random(1)
    cores = set(chat_compounds.PARTS["thanks"][1]) - {""}
    for share, low, high in ((0.0, 0.0, 0.03), (0.4, 0.36, 0.46)):
        built = [chat_compounds.build(rng, "thanks", share) for _ in range(4000)]
        assert low <= sum(phrase in cores for phrase in built) / len(built) <= high, share


def test_the_share_reaches_the_composed_turns():
    thanks = {chat_compose.normal_form(c) for c in chat_compounds.PARTS["thanks"][1] if c}

    def bare_thanks(share: float) -> int:
        return sum(chat_compose.normal_form(p) in thanks for p in prompts(3000, 5, share))

    assert bare_thanks(0.6) > 3 * max(1, bare_thanks(0.0))
