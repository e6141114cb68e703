"""Character-level tokenizers and chat templates for the two demo models, in the real checkpoint layouts.

Character level, so every digit and letter is its own token: arithmetic, spelling and reversing unseen
words are then learnable by a tiny model. The files are what real checkpoints carry (`tokenizer.json`,
`tokenizer_config.json`, `special_tokens_map.json`, `chat_template.jinja`), read by the app through
`engine.io.tokenizer.Tokenizer` exactly as it reads a downloaded model's.

`tokenizer.json` is a BPE model with no merges over the curriculum's character set (printable ASCII,
newline, `×`, `−`, and `▁` standing for a space), with byte fallback `<0x00>`..`<0xFF>` so that any other
text (emoji, accents) still encodes and decodes. The normalizer turns " " into "▁", the decoder turns it
back. There is no pre-tokenizer, so `Tokenizer.encode_text` (normalizer -> model.tokenize) yields one token
per character.

(This module is named like the `tokenizers` library; it is only ever imported as `scripts.demo.tokenizers`,
where `import tokenizers` still means the library. Do not run it as a script.)
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
from pathlib import Path

from .curriculum import FAMILIES, TASKS, Example, sample

TEMPLATES = Path(__file__).with_name("chat_templates")

DG_SPECIAL = ("<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<|turn>", "<turn|>", "<|think|>", "<|channel>",
              "<channel|>", "<|tool_response>", "<|image>", "<|image|>", "<image|>", "<|video|>", "<|audio|>")
LLADA_SPECIAL = ("<|startoftext|>", "<|endoftext|>", "<|mask|>", "<role>", "</role>", "<|role_end|>", "<think>",
                 "</think>")
SPECIAL = {"diffusion_gemma": DG_SPECIAL, "llada2_moe": LLADA_SPECIAL}
BYTE_TOKENS = tuple(f"<0x{b:02X}>" for b in range(256))
SPACE = "▁"
CHARACTERS = tuple(chr(c) for c in range(0x21, 0x7F)) + ("\n", "×", "−", SPACE)

# Role names for the ids the trainer and the checkpoint config need.
_DG_NAMES = {"pad": "<pad>", "eos": "<eos>", "bos": "<bos>", "unk": "<unk>", "mask": "<mask>",
             "turn_start": "<|turn>", "turn_end": "<turn|>", "think": "<|think|>", "channel_start": "<|channel>",
             "channel_end": "<channel|>", "tool_response": "<|tool_response>", "image_start": "<|image>",
             "image": "<|image|>", "image_end": "<image|>", "video": "<|video|>", "audio": "<|audio|>"}
_LLADA_NAMES = {"bos": "<|startoftext|>", "eos": "<|endoftext|>", "pad": "<|endoftext|>", "mask": "<|mask|>",
                "role_start": "<role>", "role_close": "</role>", "role_end": "<|role_end|>",
                "think_start": "<think>", "think_end": "</think>"}
_NAMES = {"diffusion_gemma": _DG_NAMES, "llada2_moe": _LLADA_NAMES}
# Ids that end a reply: Gemma 4 stops on <eos>, <turn|> and <|tool_response>; LLaDA-2 on <|endoftext|>.
_STOPS = {"diffusion_gemma": ("<eos>", "<turn|>", "<|tool_response>"), "llada2_moe": ("<|endoftext|>",)}


def _check_family(family: str) -> None:
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, not {family!r}")


def vocabulary(family: str, merges=()) -> tuple[str, ...]:
    """Token strings by id: special tokens, then the 256 byte-fallback tokens, then the characters, then the
    word pieces `merges` make (scripts/demo/word_pieces.py), so a tokenizer with pieces keeps every other id."""
    from .word_pieces import pieces_of

    _check_family(family)
    return SPECIAL[family] + BYTE_TOKENS + CHARACTERS + pieces_of(merges)


def vocab_size(family: str, merges=()) -> int:
    return len(vocabulary(family, merges))


def special_ids(family: str) -> dict[str, int]:
    """{"eos": 1, "mask": 4, ...}: the ids the trainer writes into config.json and generation_config.json."""
    index = {token: i for i, token in enumerate(vocabulary(family))}
    return {name: index[token] for name, token in _NAMES[family].items()}


def stop_ids(family: str) -> list[int]:
    index = {token: i for i, token in enumerate(vocabulary(family))}
    return [index[token] for token in _STOPS[family]]


def chat_template(family: str) -> str:
    _check_family(family)
    return (TEMPLATES / f"{family}.jinja").read_text(encoding="utf-8")


def build_backend(family: str, merges=(), lowercase: bool = False):
    """The `tokenizers.Tokenizer` for `family` (what tokenizer.json holds), with word-piece `merges` if any, and
    `lowercase`: prompts read lower-cased (the model still writes either case: answers are spelt by id)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers

    vocab = {token: i for i, token in enumerate(vocabulary(family, merges))}
    unk = "<unk>" if "<unk>" in vocab else None   # never used: byte fallback covers every character
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m) for m in merges], unk_token=unk, byte_fallback=True,
                                   fuse_unk=unk is not None))
    space = normalizers.Replace(" ", SPACE)
    backend.normalizer = normalizers.Sequence([normalizers.Lowercase(), space]) if lowercase else space
    backend.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()])
    # Special tokens keep the ids they have in the vocabulary; they match only in template markup, since the
    # engine tokenizes user text through the model directly.
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL[family]])
    return backend


def _configs(family: str) -> tuple[dict, dict]:
    names = _NAMES[family]
    added = {str(i): {"content": token, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False, "special": True}
             for i, token in enumerate(SPECIAL[family])}   # special tokens come first in the vocabulary
    core = {key: names[key] for key in ("bos", "eos", "pad", "mask", "unk") if key in names}
    extra = [t for t in SPECIAL[family] if t not in core.values()]
    config = {"add_bos_token": False, "add_eos_token": False, "added_tokens_decoder": added,
              "clean_up_tokenization_spaces": False, "model_max_length": 4096,
              "tokenizer_class": "PreTrainedTokenizerFast", "extra_special_tokens": {},
              **{f"{k}_token": v for k, v in core.items()}}
    if family == "diffusion_gemma":
        # Gemma 4's named roles; the engine reads eot_token as a stop token.
        config.update(eot_token="<turn|>", sot_token="<|turn>", soc_token="<|channel>", eoc_token="<channel|>",
                      think_token="<|think|>", str_token="<|tool_response>", boi_token="<|image>",
                      image_token="<|image|>", eoi_token="<image|>", video_token="<|video|>",
                      audio_token="<|audio|>", padding_side="left")
    special_map = {**{f"{k}_token": v for k, v in core.items()}, "additional_special_tokens": extra}
    return config, special_map


def write_tokenizer(folder: Path, family: str, merges=(), lowercase: bool = False) -> dict[str, int]:
    """Write the four tokenizer files for `family` (with word-piece `merges`, prompts read lower-cased if
    `lowercase`) into `folder`; returns `special_ids(family)`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    build_backend(family, merges, lowercase).save(str(folder / "tokenizer.json"))
    config, special_map = _configs(family)
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (folder / "special_tokens_map.json").write_text(json.dumps(special_map, indent=2) + "\n", encoding="utf-8")
    (folder / "chat_template.jinja").write_text(chat_template(family), encoding="utf-8")
    return special_ids(family)


def load_tokenizer(folder: Path, family: str):
    """The engine's own `Tokenizer` over a folder written by `write_tokenizer` (no config.json needed)."""
    from engine.io.checkpoint import CheckpointFiles
    from engine.io.tokenizer import Tokenizer

    folder = Path(folder)
    return Tokenizer.from_checkpoint(folder, CheckpointFiles(folder, {}, {}), family)


def answer_ids(example: Example, tokenizer) -> list[int]:
    """What the model writes after the generation prompt. DiffusionGemma: (<|channel>thought\\n reasoning
    <channel|> when thinking) answer <turn|>; LLaDA-2: answer <|endoftext|>. Markers are single special ids,
    the text is plain text, one character a token even where the tokenizer has word pieces (they are for
    reading prompts: scripts/demo/word_pieces.py)."""
    from .word_pieces import spell

    marker = tokenizer.id_of
    if tokenizer.family == "diffusion_gemma":
        ids = []
        if example.think:
            ids += [marker("<|channel>")] + spell("thought\n" + example.reasoning, tokenizer) + [marker("<channel|>")]
        return ids + spell(example.answer, tokenizer) + [marker("<turn|>")]
    if example.think:
        raise ValueError("LLaDA-2 examples have no thought channel")
    return spell(example.answer, tokenizer) + [marker("<|endoftext|>")]


def encode_example(example: Example, tokenizer) -> tuple[list[int], list[int]]:
    """(prompt ids, answer ids). The prompt is the engine's own rendering with the generation prompt, so it is
    exactly what the app sends at inference."""
    prompt = tokenizer.encode_chat(list(example.messages), think=example.think)
    return prompt, answer_ids(example, tokenizer)


def _stats(values: list[int]) -> dict[str, int]:
    ordered = sorted(values)
    return {"median": int(statistics.median(ordered)), "p99": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "max": ordered[-1]}


def length_report(family: str, n: int = 1000, *, split: str = "train", think: bool = False, seed: int = 0,
                  tokenizer=None) -> dict[str, dict[str, dict[str, int]]]:
    """{task: {"prompt": {median, p99, max}, "answer": {...}}} in tokens, over `n` samples per task."""
    if tokenizer is None:
        with tempfile.TemporaryDirectory() as folder:
            write_tokenizer(Path(folder), family)
            tokenizer = load_tokenizer(Path(folder), family)
    report = {}
    for task in TASKS:
        rng = random.Random(seed)
        pairs = [encode_example(sample(rng, task, split, family=family, think=think), tokenizer) for _ in range(n)]
        report[task] = {"prompt": _stats([len(p) for p, _ in pairs]), "answer": _stats([len(a) for _, a in pairs])}
    return report


def format_length_report(report: dict) -> str:
    lines = [f"{'task':<11} {'prompt median/p99/max':>22} {'answer median/p99/max':>22}"]
    for task, parts in report.items():
        cell = lambda s: f"{s['median']}/{s['p99']}/{s['max']}"
        lines.append(f"{task:<11} {cell(parts['prompt']):>22} {cell(parts['answer']):>22}")
    return "\n".join(lines)
