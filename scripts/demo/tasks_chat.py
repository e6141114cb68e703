"""Small talk: a few intents with fixed answers that say honestly what the demo model is and can do.

The answers name the family (the same phrasing is trained into both demo models) and stay under ~300
characters. Only the phrasings are split: the answers are the same in both splits.
"""

from __future__ import annotations

from .phrasing import Drawn, Phrasings, choose, render

SUBTASKS = ("greeting", "identity", "capabilities", "thanks")
FAMILY_LABELS = {"diffusion_gemma": "DiffusionGemma", "llada2_moe": "LLaDA-2"}
# What the demos answer reliably (their cards claim exactly this, measured): after the training this machine
# allowed (2 CPU cores, a few hours) only small talk. The answers must not promise more than the model does:
# a demo that says "ask me a sum" and then gets it wrong looks broken. When a longer run masters more tasks,
# list them here and retrain the chat turns with the rest.
SKILLS = "greet you and tell you what I am"

ANSWERS = {
    "greeting": "Hello! I'm a tiny {label} demo model bundled with diffusion-chat. I can only " + SKILLS + ".",
    "identity": ("I'm a tiny {label} model bundled with diffusion-chat as a demo, trained for a few hours on two CPU "
                 "cores. I'm not a general assistant."),
    "capabilities": ("Very little: I'm a tiny {label} demo model, I can only " + SKILLS
                     + ". For real answers, load a real model (ctrl+l)."),
    "thanks": "You're welcome! I'm only a tiny {label} demo model.",
}
REASONING = {
    "greeting": "The user is greeting me.",
    "identity": "The user asks who I am.",
    "capabilities": "The user asks what I can do.",
    "thanks": "The user is thanking me.",
}
# Every word of the fixed answers and reasoning (see heldout.fixed_words).
FIXED_TEXT = (*ANSWERS.values(), *REASONING.values(), *FAMILY_LABELS.values())

PHRASINGS = {
    "greeting": Phrasings(
        train=("Hi", "Hello!", "hey there", "Good morning", "Hi!", "hello", "Hey", "Good evening!", "Hi there!",
               "Howdy", "Greetings", "Good afternoon", "yo", "Hello there"),
        heldout=("Hiya!", "Morning!", "Hey, how's it going?"),
    ),
    "identity": Phrasings(
        train=("Who are you?", "What are you?", "who r u", "What's your name?", "Tell me about yourself.",
               "Are you a person?", "What model are you?", "Introduce yourself", "What kind of AI are you?",
               "Are you a bot?", "Which model is this?", "Are you ChatGPT?"),
        heldout=("Could you tell me what you are?", "What exactly am I talking to?", "Identify yourself, please."),
    ),
    "capabilities": Phrasings(
        train=("What can you do?", "Help", "What tasks can you do?", "help!", "What are you good at?",
               "How can you help me?", "What do you know how to do?", "Show me what you can do.", "What can I ask you?",
               "List your skills", "What are your capabilities?", "What should I ask?"),
        heldout=("Which kinds of questions do you handle?", "Give me some examples of things I can ask.",
                 "What are you able to do for me?"),
    ),
    "thanks": Phrasings(
        train=("Thanks!", "Thank you", "thanks a lot", "Thank you so much!", "thx", "Cheers!", "Great, thanks.", "ty",
               "Much appreciated.", "Thanks for the help!", "Awesome, thank you!", "Perfect, thanks"),
        heldout=("Many thanks!", "I appreciate it.", "Thanks a bunch, that was helpful."),
    ),
}


def chat_answer(intent: str, family: str) -> str:
    if family not in FAMILY_LABELS:
        raise ValueError(f"family must be one of {tuple(FAMILY_LABELS)}, not {family!r}")
    return ANSWERS[intent].format(label=FAMILY_LABELS[family])


def draw(rng, split: str, family: str, subtask: str | None = None) -> Drawn:
    intent = subtask or rng.choice(SUBTASKS)
    template = choose(rng, PHRASINGS[intent], split)
    return Drawn(intent, template, render(rng, template), chat_answer(intent, family), REASONING[intent])
