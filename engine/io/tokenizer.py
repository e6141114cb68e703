"""Tokenizer and chat format.

* Encoding/decoding uses the checkpoint's `tokenizer.json` through the `tokenizers` library.
* The chat prompt is the checkpoint's own Jinja chat template, rendered in a sandbox.
* Text a person typed never becomes a control token: user text is rendered as opaque placeholders,
  the template's own markup is tokenized with special-token matching, and every piece of user text
  is tokenized through the model's normalizer/pre-tokenizer/BPE directly, bypassing the added-token
  matcher. So a message containing `<turn|>` or `<bos>` is just text to the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Sequence

from .checkpoint import CheckpointFiles, read_json
from ..errors import CheckpointError, EngineError, InputError

_PLACEHOLDER = re.compile("\ue000(\\d+)\ue001")
_BYTE_PIECE = re.compile(r"<0x[0-9A-Fa-f]{2}>")

# The empty thinking channel a Gemma 4 template appends when thinking is off, and the markers around reasoning.
REASONING_MARKERS = (("<|channel>", "<channel|>"), ("<think>", "</think>"))


@dataclass
class ChatPrompt:
    ids: list[int]
    text: str                                   # the rendered template (user text in place), for display/debug
    pixel_values: list | None = None            # one array per image, when images were attached
    token_type_ids: list[int] | None = None
    image_tokens: list[int] = field(default_factory=list)


class Tokenizer:
    def __init__(self, backend, chat_template: str | None, special: dict[str, str], family: str):
        self.backend = backend
        self.family = family
        self.chat_template = chat_template
        self.special = special  # role -> token string (bos_token, eos_token, ...)
        self.vocab_size = backend.get_vocab_size(with_added_tokens=True)
        self._template = None
        # Ids that never show up in text: padding, BOS, mask, unknown.
        self.hidden_ids = {
            i for name in ("pad_token", "bos_token", "mask_token", "unk_token")
            if (tok := special.get(name)) and (i := backend.token_to_id(tok)) is not None
        }
        # A LLaDA-2 turn ends with <|role_end|> before <|endoftext|>; it is markup, never text.
        if (role_end := backend.token_to_id("<|role_end|>")) is not None:
            self.hidden_ids.add(role_end)
        self.eos_ids = {
            i for name in ("eos_token", "eot_token")
            if (tok := special.get(name)) and (i := backend.token_to_id(tok)) is not None
        }

    @classmethod
    def from_checkpoint(cls, path: Path, files: CheckpointFiles, family: str) -> "Tokenizer":
        from tokenizers import Tokenizer as Backend

        file = path / "tokenizer.json"
        if not file.exists():
            raise CheckpointError(f"tokenizer.json not found in {path}")
        try:
            backend = Backend.from_file(str(file))
        except Exception as exc:
            raise CheckpointError(f"cannot read {file.name}: {str(exc).splitlines()[0]}")
        config = read_json(path / "tokenizer_config.json", "tokenizer_config.json") if (path / "tokenizer_config.json").exists() else {}
        template = None
        if (path / "chat_template.jinja").exists():
            template = (path / "chat_template.jinja").read_text(encoding="utf-8")
        elif isinstance(config.get("chat_template"), str):
            template = config["chat_template"]
        elif isinstance(config.get("chat_template"), list):  # [{"name": "default", "template": ...}]
            named = {t.get("name"): t.get("template") for t in config["chat_template"] if isinstance(t, dict)}
            template = named.get("default") or next(iter(named.values()), None)
        special = {k: v for k, v in config.items() if k.endswith("_token") and isinstance(v, str)}
        if (path / "special_tokens_map.json").exists():
            for key, value in read_json(path / "special_tokens_map.json", "special_tokens_map.json").items():
                if isinstance(value, dict):
                    value = value.get("content")
                if isinstance(value, str):
                    special.setdefault(key, value)
        return cls(backend, template, special, family)

    # ---- plain text -------------------------------------------------------------------------------------

    def encode_text(self, text: str) -> list[int]:
        """Tokenize text as plain text: strings that look like special tokens stay ordinary text."""
        if not text:
            return []
        backend = self.backend
        normalized = backend.normalizer.normalize_str(text) if backend.normalizer else text
        pieces = backend.pre_tokenizer.pre_tokenize_str(normalized) if backend.pre_tokenizer else [(normalized, None)]
        model = backend.model
        return [token.id for piece, _ in pieces for token in model.tokenize(piece)]

    def encode_markup(self, text: str) -> list[int]:
        """Tokenize template markup, where special-token strings are the special tokens."""
        return self.backend.encode(text, add_special_tokens=False).ids if text else []

    def decode(self, ids: Sequence[int], keep_hidden: bool = False) -> str:
        ids = [int(i) for i in ids if keep_hidden or int(i) not in self.hidden_ids]
        return self.backend.decode(ids, skip_special_tokens=False)

    def token_text(self, token_id: int) -> str:
        """What one id looks like on its own (for the live canvas)."""
        return self.backend.decode([int(token_id)], skip_special_tokens=False)

    def token_texts(self, count: int) -> tuple[str, ...]:
        """`token_text` of ids 0..count-1 in one batch (ids the tokenizer lacks decode to "")."""
        return tuple(self.backend.decode_batch([[i] for i in range(count)], skip_special_tokens=False))

    def id_of(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    @cached_property
    def byte_ids(self) -> frozenset[int]:
        """Byte-fallback tokens (`<0xNN>`). A run of them decodes as a whole, and invalid UTF-8 turns every byte
        of the run into U+FFFD, so a later byte token can change how earlier ones read."""
        vocab = self.backend.get_vocab(with_added_tokens=False)
        return frozenset(i for piece, i in vocab.items() if _BYTE_PIECE.fullmatch(piece))

    # ---- chat ---------------------------------------------------------------------------------------------

    def render(self, messages: Sequence[dict], think: bool = False) -> tuple[str, list[str]]:
        """Render the chat template with every piece of user text replaced by a placeholder.

        Returns the rendered markup and the list of texts the placeholders stand for."""
        if not self.chat_template:
            raise CheckpointError("this checkpoint has no chat template; pass prompt ids instead")
        texts: list[str] = []
        trims = "trim" in self.chat_template

        def hold(text: str) -> str:
            texts.append(text.strip() if trims else text)
            return f"\ue000{len(texts) - 1}\ue001"

        safe_messages = []
        for message in _validated(messages):
            content = message["content"]
            if isinstance(content, str):
                content = hold(content)
            else:
                content = [dict(item, text=hold(item["text"])) if item.get("type") == "text" else dict(item)
                           for item in content]
            safe_messages.append({**message, "content": content})
        from jinja2.exceptions import SecurityError

        try:
            rendered = self._compiled().render(
                messages=safe_messages,
                add_generation_prompt=True,
                enable_thinking=bool(think),
                bos_token=self.special.get("bos_token", ""),
                eos_token=self.special.get("eos_token", ""),
            )
        except EngineError:
            raise  # the template's own raise_exception(...): a message about the input
        except SecurityError as exc:
            raise CheckpointError(f"the checkpoint's chat template tried something unsafe and was stopped: "
                                  f"{_first_line(exc)}")
        except Exception as exc:  # the template is the checkpoint's code: any failure of it is the checkpoint's
            raise CheckpointError(f"the checkpoint's chat template failed: {type(exc).__name__}: {_first_line(exc)}")
        return rendered, texts

    def has_thinking_channel(self) -> bool:
        """Whether thinking on changes what the template writes (a template that ignores `enable_thinking` has
        no channel to think in)."""
        probe = [{"role": "user", "content": "hi"}]
        try:
            return self.render(probe, think=True) != self.render(probe, think=False)
        except EngineError:
            return False   # no (working) chat template: nothing to think in either

    def encode_chat(self, messages: Sequence[dict], think: bool = False) -> list[int]:
        return self._encode_rendered(*self.render(messages, think))[0]

    def prepare_chat(self, messages: Sequence[dict], think: bool = False, images: Sequence[str] | None = None,
                     processor: Any = None) -> ChatPrompt:
        """Chat messages (+ optional image paths for the last user message) -> prompt ids and pixel values."""
        messages = [dict(m) for m in _validated(messages)]
        if images:
            if processor is None:
                raise InputError("this model cannot take images (it has no vision tower)")
            last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
            if last_user is None:
                raise InputError("images need a user message to attach to")
            content = messages[last_user]["content"]
            items = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
            messages[last_user]["content"] = [{"type": "image", "path": str(p)} for p in images] + items
        image_paths = [item["path"] for m in messages if isinstance(m["content"], list)
                       for item in m["content"] if item.get("type") == "image"]
        if image_paths and processor is None:
            raise InputError("this model cannot take images (it has no vision tower)")
        rendered, texts = self.render(messages, think)
        ids, text = self._encode_rendered(rendered, texts)
        if not image_paths:
            return ChatPrompt(ids=ids, text=text)
        return processor.prepare_prompt(ids, text, image_paths)

    def count_chat(self, messages: Sequence[dict], think: bool = False, image_cost=None) -> int:
        """How many tokens `prepare_chat` would make of these messages, without preparing any pixels: the same
        template and tokenization; each image item costs `image_cost(path)` soft tokens (0 when not given) and
        its begin/end markers in place of its one placeholder.

        Jinja and the Rust `tokenizers` are thread-safe and nothing here touches MLX, so a UI may call this on a
        worker thread while the engine thread generates (it is `ModelInfo.count_tokens`)."""
        rendered, texts = self.render(messages, think)
        count = len(self._encode_rendered(rendered, texts)[0])
        for message in messages:
            content = message.get("content")
            for item in content if isinstance(content, list) else ():
                if item.get("type") == "image":
                    count += 1 + (image_cost(item.get("path")) if image_cost is not None else 0)
        return count

    def _encode_rendered(self, rendered: str, texts: list[str]) -> tuple[list[int], str]:
        ids: list[int] = []
        shown: list[str] = []
        position = 0
        for match in _PLACEHOLDER.finditer(rendered):
            ids += self.encode_markup(rendered[position:match.start()])
            text = texts[int(match.group(1))]
            ids += self.encode_text(text)
            shown += [rendered[position:match.start()], text]
            position = match.end()
        ids += self.encode_markup(rendered[position:])
        shown.append(rendered[position:])
        return ids, "".join(shown)

    def _compiled(self):
        if self._template is None:
            from jinja2.exceptions import TemplateError
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            env.globals["raise_exception"] = _raise_template_error
            try:
                self._template = env.from_string(self.chat_template)
            except TemplateError as exc:
                raise CheckpointError(f"the checkpoint's chat template does not parse: {exc}")
        return self._template


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "no message"


# A lone surrogate is not a character: undecodable bytes (e.g. invalid UTF-8 read with `surrogateescape`, as
# Python does for command-line arguments) end up as one, and no tokenizer can encode it.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_unicode(text: str, role: str) -> None:
    if match := _SURROGATE.search(text):
        raise InputError(f"the {role} message is not valid Unicode text: a lone surrogate U+{ord(match.group()):04X} "
                         f"at character {match.start():,} (undecodable bytes, such as invalid UTF-8, become one)")


def _raise_template_error(message: str):
    raise InputError(f"chat template: {message}")


def _validated(messages: Sequence[dict]) -> list[dict]:
    if not isinstance(messages, (list, tuple)) or not messages:
        raise InputError("no messages to answer")
    out = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant", "developer"):
            raise InputError(f"each message needs a role of system, user or assistant: {message!r}"[:200])
        content = message.get("content")
        if isinstance(content, str):
            _check_unicode(content, message["role"])
        elif isinstance(content, list) and all(isinstance(i, dict) and "type" in i for i in content):
            if any(i["type"] == "text" and not isinstance(i.get("text"), str) for i in content):
                raise InputError("a text item of a message has no text")
            for item in content:
                if item["type"] == "text":
                    _check_unicode(item["text"], message["role"])
        else:
            raise InputError("message content must be a string or a list of {type: text|image} items")
        out.append(message)
    if not any(_has_text_or_media(m["content"]) for m in out if m["role"] == "user"):
        raise InputError("the prompt is empty")
    return out


def _has_text_or_media(content) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    return any(i["type"] != "text" or i.get("text", "").strip() for i in content)
