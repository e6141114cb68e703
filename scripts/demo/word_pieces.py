"""Word pieces for a demo's prompts: BPE merges learnt from the training prompts, read by the model, never written.

The demos' tokenizer is character level, so a word such as "thanks" reaches the network as six tokens, and the
LLaDA-2 demo has to build a detector for each spelling of each thanks word out of attention over characters.
A bag of character n-grams fitted on the same training prompts gets every panel's thanks right; the network,
after eighteen passes, does not (bench/README.md, "Eighteenth pass"). With word pieces, the frequent words of
the training prompts are single tokens whose embeddings can carry what the word means.

Lower-casing is the other half of what the n-gram baseline has for free: it reads "THANK YOU" as "thank you",
where the network has to learn each case of each word from the training data's case noise. A demo tokenizer may
lower-case what it reads (`--lowercase-prompts`: the normalizer folds the case of everything the engine encodes,
which is the prompt), and since answers are spelt by id, not through the normalizer, the model still writes both.

Only the prompt side changes. Answers are still trained one character a token (`spell`), so the model writes
exactly what it wrote before and the canvas still resolves letter by letter; training never asks for a piece.
LLaDA-2 writes through its own output head, whose piece rows start as a token it never writes. DiffusionGemma
writes through its input embeddings (tied), so a piece's one row both reads the word and scores it as output
(`grow_vocabulary`). The merges join letters and digits only, never punctuation or the space mark, so a piece
never spans two words.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np

SPACE = "▁"


def words_of(texts) -> Counter:
    """How often each run of letters and digits occurs in `texts`: pieces are parts of words, never
    punctuation, whose runs ("!!", "...") mean little and would take merges from the words."""
    counts: Counter = Counter()
    for text in texts:
        counts.update(re.findall(r"[A-Za-z0-9]+", text))
    return counts


def learn_merges(texts, count: int, alphabet) -> list[tuple[str, str]]:
    """The `count` most frequent adjacent pairs, merged greedily one after the other (classic BPE over words),
    ties broken by the pair's text so that the result is the same in every process. Words holding a character
    outside `alphabet` (emoji, accents: byte-fallback tokens) are skipped."""
    alphabet = set(alphabet)
    words = {tuple(word): n for word, n in words_of(texts).items() if set(word) <= alphabet}
    merges: list[tuple[str, str]] = []
    while len(merges) < count:
        pairs: Counter = Counter()
        for symbols, n in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        if pairs[best] < 2:
            break
        merges.append(best)
        words = {_merged(symbols, best): n for symbols, n in words.items()}
    return merges


def _merged(symbols: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def pieces_of(merges) -> tuple[str, ...]:
    """The tokens the merges make, in merge order (each new once)."""
    seen: dict[str, None] = {}
    for left, right in merges:
        seen.setdefault(left + right, None)
    return tuple(seen)


def training_prompts(n_per_kind: int, seed: int = 0) -> list[str]:
    """Composed training-split prompts of every intent and of out-of-scope kinds (no held-out template)."""
    from .chat_compose import composed_prompts

    return [prompt for prompts in composed_prompts(n_per_kind, seed, "train").values() for prompt in prompts]


def spell(text: str, tokenizer) -> list[int]:
    """`text` one character a token, looked up by id (byte-fallback tokens for characters outside the
    vocabulary), whatever merges or lower-casing the tokenizer applies to what it reads: what answers are
    trained as. For the plain character tokenizer it equals `tokenizer.encode_text`."""
    ids = []
    for character in text:
        token = tokenizer.id_of(SPACE if character == " " else character)
        ids += [token] if token is not None else \
            [tokenizer.id_of(f"<0x{byte:02X}>") for byte in character.encode("utf-8")]
    return ids


def grow_vocabulary(embeddings: np.ndarray, head: np.ndarray | None, piece_parts: list[list[int]],
                    quiet_row: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The input embeddings and output head of a trained model with a row appended per piece. Its input row is
    the mean of its characters' rows, where the network already reads the word; its output row is a copy of
    `quiet_row`'s, a token the model has learnt never to write (a byte no answer holds), so the answers it writes
    do not change. `head` None: the model writes through its input embeddings (tied), and the mean row is the
    piece's output row too, its logit the mean of its letters'. Training never asks for a piece, so it learns
    to keep them low. DiffusionGemma's canvas noise is drawn over the whole vocabulary, pieces included, so a
    grown DiffusionGemma must be trained before it answers again (bench/README.md, "Twenty-second pass")."""
    if head is not None and embeddings.shape != head.shape:
        raise ValueError(f"embeddings {embeddings.shape} and head {head.shape} disagree")
    width = embeddings.shape[1]
    new_inputs = np.array([embeddings[parts].mean(axis=0) for parts in piece_parts]).reshape(-1, width)
    grown_inputs = np.concatenate([embeddings, new_inputs.astype(embeddings.dtype)])
    if head is None:
        return grown_inputs, None
    new_outputs = np.repeat(head[quiet_row][None, :], len(piece_parts), axis=0)
    return grown_inputs, np.concatenate([head, new_outputs.astype(head.dtype)])


# ---- the trainer's side ---------------------------------------------------------------------------------------

PROMPTS_PER_KIND = 4000   # 24,000 composed training prompts: every training template many times over
RUN_FILE = "word-pieces.json"
# The token table under the trainers' names: LLaDA-2 (own output head), DiffusionGemma (tied).
EMBEDDING_NAMES = ("word_embeddings.weight", "embed_tokens.weight")


def reading_of_checkpoint(folder: Path) -> tuple[list[tuple[str, str]], bool]:
    """(merges, lower-cased or not) of the tokenizer a trained checkpoint folder carries."""
    path = Path(folder) / "tokenizer.json"
    if not path.exists():
        return [], False
    saved = json.loads(path.read_text(encoding="utf-8"))
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in saved["model"].get("merges") or []]
    return merges, "Lowercase" in json.dumps(saved.get("normalizer"))


def reading_for_run(run: Path, count: int, lowercase: bool, init_from: Path | None = None
                    ) -> tuple[list[tuple[str, str]], bool]:
    """How the run's tokenizer reads prompts: (merges, lower-cased or not). Read from `run`/word-pieces.json when
    it has one (a resumed run keeps its tokenizer whatever the options now say); else what `init_from` (the
    checkpoint a fine-tune starts from) reads with, lower-cased too if `lowercase`; else `count` merges learnt
    from the training prompts (lower-cased first if `lowercase`). Written to the run file unless there is
    nothing to write ([], False)."""
    from .tokenizers import CHARACTERS

    path = Path(run) / RUN_FILE
    if path.exists():
        stored = json.loads(path.read_text())
        return [tuple(pair) for pair in stored["merges"]], bool(stored.get("lowercase", False))
    merges, folded = reading_of_checkpoint(init_from) if init_from is not None else ([], False)
    if merges and count:
        raise ValueError(f"{init_from} already reads prompts with {len(merges)} word pieces")
    lowercase = lowercase or folded
    if not merges and count:
        prompts = training_prompts(PROMPTS_PER_KIND)
        merges = learn_merges([p.lower() for p in prompts] if lowercase else prompts, count, CHARACTERS)
    if not merges and not lowercase:
        return [], False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"merges": merges, "pieces": pieces_of(merges), "lowercase": lowercase},
                               ensure_ascii=False) + "\n")
    return merges, lowercase


def grow_checkpoint(arrays: dict, own: dict, family: str, merges) -> dict:
    """`arrays` (a trained checkpoint's tensors under the trainer's names) with a row per word piece appended to
    its token embeddings and to its output head if it has one (`grow_vocabulary`), when `own` (the network being
    trained) has them and `arrays` does not. Anything else about the vocabulary must already agree."""
    from .tokenizers import vocabulary

    if all(tuple(arrays[name].shape) == tuple(own[name].shape) for name in own if name in arrays):
        return arrays
    names = [name for name in arrays if name.endswith(EMBEDDING_NAMES)]
    if len(names) != 1:
        raise ValueError("word pieces are grown into a checkpoint with one embedding table")
    embedding = names[0]
    have, want = arrays[embedding].shape[0], own[embedding].shape[0]
    if have == want:   # the vocabularies agree; what else differs, loading the weights reports
        return arrays
    tokens = vocabulary(family, merges)
    if want != len(tokens) or have != len(vocabulary(family)):
        raise ValueError(f"a vocabulary of {have} tokens cannot grow to {want} with these word pieces")
    index = {token: i for i, token in enumerate(tokens)}
    parts = [[index[character] for character in piece] for piece in tokens[have:]]
    head = np.asarray(arrays["lm_head.weight"]) if "lm_head.weight" in arrays else None
    grown_inputs, grown_head = grow_vocabulary(np.asarray(arrays[embedding]), head, parts, index["<0x00>"])
    grown = arrays | {embedding: grown_inputs}
    return grown if grown_head is None else grown | {"lm_head.weight": grown_head}
