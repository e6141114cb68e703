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

# "Hi", "Who are you?" and "What can you do?" get one answer that says both what the demo is and what it can do,
# as issue 9 asks of these turns. The tiny models mixed these intents up (held-out: "What exactly am I talking
# to?" answered with the capabilities line and the reverse; "Hey, how's it going?" with the self-description), and
# each of them deserves the whole honest answer anyway. Only thanks keep an answer of their own.
ABOUT = ("I'm a tiny {label} demo model bundled with diffusion-chat: I can only " + SKILLS
         + ". For real answers, load a real model (ctrl+l).")
ANSWERS = {
    "greeting": ABOUT,
    "identity": ABOUT,
    "capabilities": ABOUT,
    "thanks": "You're welcome! I'm only a tiny {label} demo model.",
}
# The reasoning says why the answer is the one it is, so it follows the answers: one line for the about answer,
# one for thanks. With a line per intent (and a fifth for out-of-scope prompts) the tiny model, unsure between
# intents that all get the about answer anyway, wrote blends such as "The user asks feting ee." and then garbled
# the answer after them (a 1,500-step fine-tune: 10 of 60 panel answers with thinking on).
ABOUT_REASONING = "I will tell the user what I am and what I can do."
REASONING = {
    "greeting": ABOUT_REASONING,
    "identity": ABOUT_REASONING,
    "capabilities": ABOUT_REASONING,
    "thanks": "The user is thanking me.",
}
# Training prompts sometimes open with a filler (the intent is in the rest of the sentence, not in a leading
# "Hey,"), or close with a smiley. Training only: the held-out prompts stay exactly the listed phrasings.
FILLERS = ("So, ", "Ok, ", "Hey, ", "Um, ", "Well, ", "Quick question: ")
FILLER_PROBABILITY = 0.25
SMILEY = " :)"
SMILEY_PROBABILITY = 0.1
# Every word of the fixed answers, reasoning and fillers (see heldout.fixed_words).
FIXED_TEXT = (*ANSWERS.values(), *REASONING.values(), *FAMILY_LABELS.values(), *FILLERS)

PHRASINGS = {
    "greeting": Phrasings(
        train=("Hi", "Hello!", "hey there", "Good morning", "Hi!", "hello", "Hey", "Good evening!", "Hi there!",
               "Howdy", "Greetings", "Good afternoon", "yo", "Hello there",
               # A second batch (2026-12-01): with 14 phrasings the models learned the phrasings, not the intent.
               "Hey!", "hi :)", "Hello, friend.", "Heya", "Hey hey", "Hello hello!", "Sup", "What's up?", "Ahoy!",
               "Hi, nice to meet you.", "Hey, what's new?", "Hello again!", "Good day!", "Evening!", "Hey you",
               "Oh hi!", "Hellooo", "Hi bot", "Hello, anyone there?", "Hey, good to see you."),
        heldout=("Hiya!", "Morning!", "Hey, how's it going?"),
    ),
    "identity": Phrasings(
        train=("Who are you?", "What are you?", "who r u", "What's your name?", "Tell me about yourself.",
               "Are you a person?", "What model are you?", "Introduce yourself", "What kind of AI are you?",
               "Are you a bot?", "Which model is this?", "Are you ChatGPT?",
               "Who am I chatting with?", "What is this thing?", "Are you human?", "Are you an AI?",
               "Who made you?", "What are you exactly?", "Tell me what you are.", "What is your name?",
               "Are you real?", "Who is this?", "Say who you are.", "What sort of model is this?",
               "Describe yourself.", "Are you a robot?", "What am I speaking with?", "Who's there?",
               "Is this a real AI?", "What should I call you?",
               # A fourth batch (2026-12-01, session 5): requests rather than questions, some with "please", because
               # the DiffusionGemma demo read such held-out requests as thanks (they end in "." like most thanks).
               "Please introduce yourself.", "State your name, please.", "Tell me your name, please.",
               "Explain what you are.", "Say your name.", "Kindly introduce yourself.", "Let me know who you are.",
               "I'd like to know who you are.", "Please say what you are.", "Your name, please.",
               "Describe what you are, please.", "Name yourself.", "I want to know what you are."),
        heldout=("Could you tell me what you are?", "What exactly am I talking to?", "Identify yourself, please."),
    ),
    "capabilities": Phrasings(
        train=("What can you do?", "Help", "What tasks can you do?", "help!", "What are you good at?",
               "How can you help me?", "What do you know how to do?", "Show me what you can do.", "What can I ask you?",
               "List your skills", "What are your capabilities?", "What should I ask?",
               "What can you help with?", "What are you for?", "What do you do?", "Can you help me?",
               "What questions can you answer?", "What's possible here?", "What can this demo do?",
               "How do I use you?", "What are your skills?", "What kind of things do you do?", "Any skills?",
               "What can I do with you?", "How are you useful?", "Tell me what you can do.", "What do you offer?",
               "What jobs can you do?", "I need help, what can you do?", "Menu?",
               # The fourth batch: requests, as for identity.
               "Show me your skills, please.", "Tell me your skills.", "List what you can do, please.",
               "Explain what you can do.", "Suggest something to try.", "Let me know what you can do.",
               "Please list your capabilities.", "Describe your skills.", "Name a few things you can do.",
               "Show me some things you do.", "I'd like to know what you can do.", "Tell me how you can help, please.",
               "Explain how to use you."),
        heldout=("Which kinds of questions do you handle?", "Give me some examples of things I can ask.",
                 "What are you able to do for me?"),
    ),
    "thanks": Phrasings(
        train=("Thanks!", "Thank you", "thanks a lot", "Thank you so much!", "thx", "Cheers!", "Great, thanks.", "ty",
               "Much appreciated.", "Thanks for the help!", "Awesome, thank you!", "Perfect, thanks",
               "Thank you very much.", "thanks!!", "Nice, thank you.", "Cool, thanks!", "Thanks, bye!", "tysm",
               "Thank you kindly.", "OK thanks", "Thanks so much for that.", "Great job, thanks!", "Thanks again!",
               "Thank u", "Wonderful, thank you.", "Lovely, thanks.", "Thanks, that helps.", "Brilliant, cheers.",
               "Thanks mate", "Grateful, thank you!",
               # A third batch (2026-12-01, session 4): thanks were the one intent still read as another.
               "Big thanks!", "Thanks heaps!", "Thank you, friend.", "Thanks, got it.", "Okay, thank you!",
               "Super, thanks!", "You're the best, thanks.", "Ta!", "Thank you for your help.", "Thanks, that's all.",
               "So kind of you, thank you.", "Fantastic, thanks a ton.", "Thanks for answering.", "Gracias!",
               "Thank you, great work.", "Merci!"),
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
    prompt = render(rng, template)
    if split == "train":
        if intent != "greeting" and rng.random() < FILLER_PROBABILITY:
            prompt = rng.choice(FILLERS) + prompt[0].lower() + prompt[1:]
        if rng.random() < SMILEY_PROBABILITY:
            prompt += SMILEY
    return Drawn(intent, template, prompt, chat_answer(intent, family), REASONING[intent])
