"""Small-talk prompts grown by composition: opener × body × closer, then surface noise (case, typos, slang,
emoji), sometimes two sentences; plus out-of-scope prompts of many kinds, whose answer is the about line.

The split is by *template*: every body (and every out-of-scope generator's pattern) falls on one side by a
stable hash, so held-out prompts are built from bodies training never saw, not only new strings of seen ones.
Openers, closers and noise are shared: they carry no intent. A body or pattern that reads like a prompt of the
hand-written panels (scripts/demo/panel_prompts.py) is always held out, so the panels stay unseen. The
out-of-scope kinds and their pools are in scripts/demo/chat_out_of_scope.py.

The curriculum (and with it the held-out evaluation of bench/eval_demo.py) is unchanged: the trainer mixes these
examples into its chat turns (`--composed-chat`, scripts/demo/feed.py), thanks and out-of-scope first.
"""

from __future__ import annotations

import functools
import re

from . import chat_compounds
from .chat_out_of_scope import OUT_OF_SCOPE, fill
from .curriculum import Example
from .heldout import check_split, stable_hash
from .panel_prompts import PANEL, PANEL_2
from .tasks_chat import ABOUT_REASONING, REASONING, chat_answer

HELDOUT_PERCENT = 20
OPENERS = ("", "", "", "ok ", "so ", "hey, ", "um ", "well, ", "quick question: ", "hi again. ", "btw ", "listen, ",
           "one thing: ", "hmm, ")
CLOSERS = ("", "", "", " :)", " 🙂", " 😊", " lol", "!", "?", " pls", " please", " haha", "!!", " 👍", "...")
# Emoji reach the demos' byte-fallback tokenizers as four byte tokens each: a closer drawn from many of them, on
# every intent alike, so an unseen emoji's last byte is not a stranger (the panel's 🙏 and 🤔 were never seen).
EMOJI = tuple(("😀 😃 😄 😁 😆 😅 😂 🤣 😉 😍 🥰 😘 😎 🤓 🤔 🤗 🤖 👋 👏 🙌 🙏"
                " 💪 👌 ✌️ ❤️ 💯 🔥 ✨ 🎉 😢 😭 😡 🥲 🫠 🙃 😬 🤷 🌟 ☀️ 🍕 🚀 ⭐ 💡").split())


def closer(rng) -> str:
    return rng.choice(CLOSERS) if rng.random() < 0.8 else " " + rng.choice(EMOJI)

# Bodies per intent. Thanks include statements and appreciation; greetings include questions.
BODIES = {
    "greeting": (
        "hi", "hello", "hey", "hiya", "howdy", "yo", "sup", "good morning", "good evening", "good afternoon",
        "morning", "evening", "hey there", "hello there", "hi there", "greetings", "heya", "hey hey", "hello friend",
        "how are you", "how's it going", "how are you doing", "what's up", "how do you do", "how have you been",
        "are you there", "anyone home", "is anybody there", "can you hear me", "nice to meet you", "hi bot",
        "hello again", "good day", "hey buddy", "hola", "bonjour", "salut", "ahoy", "hi, how are things",
        "hey, you awake", "what's new", "long time no see", "hello, how are you today", "hey how r u", "wassup",
        "hellooo", "oh hi", "good to see you", "hi, anybody around", "how's your day",
        # A second batch (2026-12-03): a 1,500-step LLaDA-2 fine-tune on the first still read short slang
        # ("what r ur features", "knock knock") as thanks and appreciation ("this was useful") as a request.
        "hi hi", "heyy", "hey!!", "helo", "hullo", "g'day", "morning all", "evening all", "hey friend", "hello bot",
        "hi assistant", "hello ai", "hey robot", "howdy partner", "hiii", "yo yo", "sup bro", "whats good",
        "what's happening", "how's everything", "how goes it", "how's life", "how are things", "you there",
        "anybody there", "hello? anyone", "ping", "hey, you there", "good to meet you", "pleased to meet you",
        "hi, i'm new here", "first time here, hi", "hey, i'm back", "namaste", "ciao", "hallo", "hej",
        "hi, how are you", "hello, nice to meet you", "hey, how are you doing today"),
    "identity": (
        "who are you", "what are you", "what's your name", "what is your name", "tell me about yourself",
        "introduce yourself", "are you a person", "are you a bot", "are you human", "are you an ai",
        "are you a robot", "are you real", "what model are you", "which model is this", "are you chatgpt",
        "are you gpt", "who made you", "who built you", "who created you", "what kind of ai are you",
        "who am i talking to", "who am i chatting with", "what am i talking to", "what is this thing",
        "what should i call you", "describe yourself", "say who you are", "what exactly are you",
        "are you a real person or a bot", "is this an ai", "whats ur name", "who r u", "wat r u", "u a bot",
        "are you a language model", "what are you called", "do you have a name", "tell me what you are",
        "i want to know who you are", "what sort of program are you", "are you alive", "who's this",
        "explain what you are", "identify yourself", "what's this model", "who's on the other end",
        "tell me a little about yourself", "what are you exactly", "are you sentient", "what is this chatbot",
        # The second batch.
        "who are u", "who is this bot", "are you a chatbot", "are you an assistant", "is this chatgpt",
        "are you gemini", "are you claude", "are you siri", "what ai is this", "which ai are you", "what llm is this",
        "what language model is this", "who am i speaking to", "am i talking to a bot", "am i talking to a human",
        "is this a bot", "is this a human", "are you a machine", "are you a computer", "are you a program",
        "whats this", "what is this", "who dis", "who's talking", "what do i call you", "where do you come from",
        "who trained you", "who programmed you", "what version are you", "tell me who you are", "so who are you",
        "what are you anyway", "whats your name", "ur name", "name?", "who r you", "what kind of bot is this"),
    "capabilities": (
        "what can you do", "help", "halp", "what are you good at", "how can you help me", "what can i ask you",
        "what are your capabilities", "what are your skills", "list your skills", "what do you do",
        "what are you for", "can you help me", "what questions can you answer", "how do i use you",
        "how do i use this", "what can this demo do", "what kinds of things can i ask", "what are your features",
        "what r ur features", "wat can u do", "what are you capable of", "any tips on what to ask",
        "what should i ask", "what's this thing good for", "what can you help with", "show me what you can do",
        "what do you know how to do", "give me examples of what to ask", "what tasks can you do",
        "what can i do here", "how does this work", "what jobs can you do", "what's possible here",
        "tell me what you can do", "what are you able to do", "menu", "options", "what do you offer",
        "can you do anything useful", "what are you useful for", "explain how to use you", "what's your skillset",
        "what are your abilities", "suggest something to try", "what can i try", "got any features",
        "what functions do you have", "teach me how to use you", "what are you programmed to do",
        "what's your purpose",
        # The second batch.
        "what do u do", "what can you help me with", "can you do stuff", "what stuff can you do",
        "what things can you do", "how can i use you", "how do i start", "where do i start", "what now",
        "instructions", "commands", "how does this app work", "what are my options", "what can i type",
        "give me ideas", "ideas", "what should i try", "what are your limits", "what can't you do",
        "can you do maths", "can you write code", "can you answer questions", "are you useful",
        "what is your function", "what's your job", "show me your features", "features", "help me", "help pls",
        "need help", "i need assistance", "assist me", "what do you support", "what are you made for",
        "what is this for", "what u got"),
    "thanks": (
        "thanks", "thank you", "thx", "ty", "tysm", "thanks a lot", "thank you so much", "many thanks",
        "thanks a bunch", "cheers", "cheers mate", "much appreciated", "i appreciate it", "appreciate it",
        "i really appreciate your help", "i appreciate your help", "that was helpful", "that was really helpful",
        "you've been very helpful", "you've been a great help", "you were helpful", "that helped a lot",
        "that's exactly what i needed", "great, thanks", "perfect, thank you", "awesome, thanks",
        "thanks man, appreciate it", "thank u", "thx a ton", "ty ty", "much obliged", "grateful", "i'm grateful",
        "thanks for the help", "thank you for your help", "thanks so much for that", "nice one, thanks",
        "you're the best", "you rock", "that was great, thank you", "big thanks", "thanks heaps", "ta",
        "gracias", "merci", "danke", "thanks again", "this was useful", "you helped me a lot", "kudos, thanks",
        # The second batch.
        "thanks for that", "thank you kindly", "thanks a million", "a million thanks", "thanks so much",
        "thank you very much", "i owe you one", "you saved me", "you're a lifesaver", "that's great, thanks",
        "brilliant, thank you", "lovely, cheers", "that helps, thanks", "really appreciated",
        "your help is appreciated", "thanks for your time", "thanks for answering", "thanks for explaining",
        "that was perfect", "great answer, thanks", "nice, ty", "thnx", "thanx", "thank youuu", "thanks buddy",
        "thanks friend", "tyvm", "appreciated", "so helpful, thank you", "you're awesome, thanks", "legend, thanks",
        "ok thank you", "got it, thanks", "cool thx", "great help", "you're very kind", "that's kind of you",
        "thank you for everything", "i can't thank you enough", "thanks, that's all i needed", "thank you, goodbye",
        "awesome, cheers", "that was useful", "very helpful", "super helpful, thanks", "you were a big help",
        "this helped", "that did the trick, thanks", "i'm thankful", "many thanks to you"),
}



def normal_form(text: str) -> str:
    """Lower case, letters and digits only, single spaces: how the panel guard compares texts."""
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", text.lower()).split())


# The guard keeps the two panels written for this project out of training. Not the third, written by an outsider:
# many of its strings are everyday phrases ("thx", "cheers") that training has always had, and it measures the
# demos as they are (scripts/demo/panel_overlap.py says which of its strings training has).
PANEL_FORMS = frozenset(normal_form(p) for panel in (PANEL, PANEL_2) for prompts in panel.values() for p in prompts)
# Drawn for training: thanks (both demos' weakest intent) and out-of-scope (the most varied) most often, but not
# so often that the other intents are forgotten: at 0.35 / 0.30 / 0.12 a 450-step LLaDA-2 fine-tune lost
# capabilities prompts (90 -> 70 % on the panel) to the thanks answer.
TRAIN_WEIGHTS = {"thanks": 0.28, "out_of_scope": 0.27, "greeting": 0.15, "identity": 0.15, "capabilities": 0.15}
OUT_OF_SCOPE_REASONING = ABOUT_REASONING   # the about answer, so its reason


def _side(kind: str, text: str) -> str:
    if normal_form(text) in PANEL_FORMS:
        return "heldout"
    return "heldout" if stable_hash("chat-compose", kind, text) % 100 < HELDOUT_PERCENT else "train"


def bodies(intent: str, split: str) -> tuple[str, ...]:
    check_split(split)
    return tuple(b for b in BODIES[intent] if _side(intent, b) == split)


def out_of_scope_patterns(split: str) -> tuple[tuple[str, str], ...]:
    check_split(split)
    return tuple((kind, p) for kind, patterns in OUT_OF_SCOPE.items() for p in patterns
                 if _side("out_of_scope", p) == split)


def _typo(rng, text: str) -> str:
    """One slip: a doubled, dropped or swapped letter, away from the first letter."""
    letters = [i for i, c in enumerate(text) if c.isalpha() and i > 0]
    if not letters:
        return text
    i = rng.choice(letters)
    kind = rng.randrange(3)
    if kind == 0:
        return text[:i] + text[i] + text[i:]
    if kind == 1:
        return text[:i] + text[i + 1:]
    return text[:i - 1] + text[i] + text[i - 1] + text[i + 1:] if text[i - 1].isalpha() else text


def _stretch(rng, text: str) -> str:
    """A word's last letter held ("heyyy", "thanksss"), as people type when they mean it."""
    ends = [i for i, c in enumerate(text) if c.isalpha() and (i + 1 == len(text) or not text[i + 1].isalpha())]
    if not ends:
        return text
    i = rng.choice(ends)
    return text[:i + 1] + text[i] * rng.randint(1, 3) + text[i + 1:]


def noised(rng, text: str) -> str:
    """Case (as typed, capitalised, ALL CAPS, lower), a typo or a held letter now and then, apostrophes dropped
    sometimes ("whats", "youre")."""
    if rng.random() < 0.2:
        text = text.replace("'", "")
    if rng.random() < 0.1:
        text = _stretch(rng, text)
    style = rng.random()
    if style < 0.35:
        text = text[:1].upper() + text[1:]
    elif style < 0.5:
        text = text.upper()
    if rng.random() < 0.15:
        text = _typo(rng, text)
    return text


def compose(rng, intent: str, split: str, bare: float = 0.0) -> tuple[str, str]:
    """(template, prompt): the body is the template the split is kept by. An opener can turn one side's body into
    the other's ("ok " + "thank you" is the body "ok thank you"): such a prompt is drawn again, on either side.
    `bare`: the share of built phrases that are the intent's words alone (chat_compounds.build)."""
    avoided = _body_forms("train") if split == "heldout" else _reserved_forms()
    while True:
        body, prompt = _compose_once(rng, intent, split, bare)
        if normal_form(prompt) not in avoided:
            return body, prompt


def compound_template(intent: str) -> str:
    """The template of a phrase built by chat_compounds: training only, so never on the held-out side."""
    return f"<compound {intent}>"


def _compound(rng, intent: str, bare: float = 0.0) -> str:
    """A built phrase that is neither a held-out body nor a panel prompt (it may contain one: the panel, not
    the composed held-out set, is the strict measure of generalisation)."""
    reserved = _reserved_forms()
    while True:
        phrase = chat_compounds.build(rng, intent, bare)
        if normal_form(phrase) not in reserved:
            return phrase


@functools.cache
def _body_forms(split: str) -> frozenset[str]:
    return frozenset(normal_form(b) for i in BODIES for b in bodies(i, split))


@functools.cache
def _reserved_forms() -> frozenset[str]:
    """What training never shows as a whole prompt: the panel and the held-out bodies."""
    return PANEL_FORMS | _body_forms("heldout")


COMPOUND_SHARE = 0.45   # of training phrases, built from parts rather than drawn from BODIES


def _compose_once(rng, intent: str, split: str, bare: float) -> tuple[str, str]:
    if split == "train" and rng.random() < COMPOUND_SHARE:
        body = _compound(rng, intent, bare)
        template = compound_template(intent)
    else:
        body = template = rng.choice(bodies(intent, split))
    end = rng.choice(("", "", "?" if intent in ("identity", "capabilities") or body.startswith(("how", "what", "are"))
                      else "!", "."))
    sentence = rng.choice(OPENERS) + body + end + closer(rng)
    if rng.random() < 0.15:   # two sentences: a greeting or a thanks before the real request
        lead = "hi" if intent != "greeting" else "hello"
        sentence = rng.choice((lead + ". ", lead + "! ")) + sentence
    return template, noised(rng, sentence.strip())


def compose_out_of_scope(rng, split: str) -> tuple[str, str]:
    while True:   # a filled pattern may happen to be a panel prompt ("2+2=?"): training never shows one
        kind, pattern = rng.choice(out_of_scope_patterns(split))
        text = fill(rng, pattern)
        if kind != "gibberish":
            text = noised(rng, rng.choice(OPENERS) + text + rng.choice(("", "?", ".", "")) + closer(rng))
        elif rng.random() < 0.2:   # mashing with caps lock on
            text = text.upper()
        text = text.strip() or "?"
        if split == "heldout" or normal_form(text) not in PANEL_FORMS:
            return pattern, text


def intent_weights(thanks_share: float = 0.0) -> dict[str, float]:
    """TRAIN_WEIGHTS, or with thanks drawn at `thanks_share` and the other kinds keeping their ratios (0 = as is)."""
    if not thanks_share:
        return dict(TRAIN_WEIGHTS)
    others = sum(w for intent, w in TRAIN_WEIGHTS.items() if intent != "thanks")
    return {intent: thanks_share if intent == "thanks" else (1 - thanks_share) * w / others
            for intent, w in TRAIN_WEIGHTS.items()}


def example(rng, split: str, family: str, think: bool = False, thanks_share: float = 0.0,
            bare_share: float = 0.0) -> Example:
    """One composed single-turn chat example (intents by `intent_weights(thanks_share)`; `bare_share`: compose's
    `bare`)."""
    weights = intent_weights(thanks_share)
    intent = rng.choices(tuple(weights), weights=tuple(weights.values()))[0]
    if intent == "out_of_scope":
        template, prompt = compose_out_of_scope(rng, split)
        answer, reasoning = chat_answer("identity", family), OUT_OF_SCOPE_REASONING
    else:
        template, prompt = compose(rng, intent, split, bare_share)
        answer, reasoning = chat_answer(intent, family), REASONING[intent]
    return Example(task="chat", messages=({"role": "user", "content": prompt},), think=think,
                   reasoning=reasoning if think else "", answer=answer, subtask=intent, template=template)


# An auxiliary task for training only (train.py --intent-labels): under this system message a composed turn is
# answered with its intent's name. The two lines alone teach "thanks or not", where "not" is everything from a
# greeting to keyboard mashing; the names teach five kinds, each of one shape, which the network may separate from
# thanks more easily than their union (bench/README.md, "Fourteenth pass": a little, on composed prompts). No
# user types the system message, so the app never sees it.
INTENT_SYSTEM = "name the intent"
INTENT_NAMES = {"greeting": "greeting", "identity": "identity", "capabilities": "capabilities", "thanks": "thanks",
                "out_of_scope": "other"}


def labelled(example: Example) -> Example:
    """`example` (a composed turn) asked for its intent's name under INTENT_SYSTEM instead of its line."""
    return Example(task="chat", messages=({"role": "system", "content": INTENT_SYSTEM}, *example.messages),
                   think=False, reasoning="", answer=INTENT_NAMES[example.subtask], subtask=example.subtask,
                   template=example.template)


def composed_prompts(n: int, seed: int, split: str) -> dict[str, tuple[str, ...]]:
    """{intent: `n` prompts} composed from `split`'s templates, and `n` out-of-scope ones, drawn with `seed`."""
    import random

    rng = random.Random(seed)
    prompts = {intent: tuple(compose(rng, intent, split)[1] for _ in range(n)) for intent in BODIES}
    prompts["out_of_scope"] = tuple(compose_out_of_scope(rng, split)[1] for _ in range(n))
    return prompts
