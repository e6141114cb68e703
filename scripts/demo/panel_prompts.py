"""A held-out panel of what people actually type at the demos, written by hand outside the training data.

Ten per chat intent (all caps, slang and abbreviations, typos, emoji, multi-sentence, thanks as a statement or
as appreciation, greetings as questions) and twenty out-of-scope prompts (maths, code, facts, jokes, gibberish)
whose right answer is the about line. None of these strings, and none of their templates, is in the training
phrasings (tests/test_demo_panel.py checks it); bench/eval_demo.py --panel measures the demos on them.
"""

from __future__ import annotations

PANEL = {
    "greeting": (
        "HELLO?", "hey hows it going", "hi!! 👋", "Good morning, how are you today?", "heyyy whats up",
        "Hi, is anybody home?", "hola", "sup dude", "hello hello, can you hear me?", "Yo! How r u?",
    ),
    "identity": (
        "WHO ARE YOU", "wat r u", "are u a real person or a bot?", "So what exactly are you?",
        "hey. who am i talking to rn", "r u gpt?", "Is this an AI? Just curious.", "whats ur name lol",
        "Tell me a little about yourself please.", "who built you? 🤖",
    ),
    "capabilities": (
        "WHAT CAN YOU DO", "wat can u do", "what are u capable of?", "Can you help me with anything? What do you do?",
        "what r ur features", "ok so how do i use this", "What kinds of things can I ask you?",
        "any tips on what to ask?", "halp", "what's this thing good for 🤔",
    ),
    "thanks": (
        "THANK YOU", "thanks man, appreciate it", "I really appreciate your help.", "that was helpful, thank you!",
        "thx a ton 🙏", "You've been very helpful.", "cheers mate", "Thanks! That's exactly what I needed.",
        "much obliged", "ty ty",
    ),
    "out_of_scope": (
        "What is 17 times 23?", "solve x^2 - 4 = 0", "Write a Python function that reverses a string.",
        "how do i center a div in css", "What's the capital of Australia?", "Who won the world cup in 2018?",
        "Tell me a joke.", "knock knock", "asdfghjkl", "qwe rty uio", "Translate 'good night' into French.",
        "What's the weather like tomorrow?", "Write me a poem about the sea.", "Summarise the plot of Hamlet.",
        "how many legs does a spider have", "SELECT * FROM users;", "What is the meaning of life?",
        "Recommend a good book.", "2+2=?", "explain quantum computing in one sentence",
    ),
}
INTENTS = tuple(PANEL)

# A second panel, written by hand on 2026-12-05 before that day's training and never trained on: by then the first
# panel's misses had shaped five passes of training data (chat_compounds, the out-of-scope kinds), so it no longer
# measured phrasings nobody had looked at. Same shape: ten per intent, twenty out of scope.
PANEL_2 = {
    "greeting": (
        "heyyy there friend 😄", "GOOD EVENING TO YOU", "hiii how are u", "Morning! How's your day going?", "yo whats good",
        "Hello, is this thing on?", "hey, how have you been?", "hii 👋 hows ur day", "howdy, stranger", "Evening! Anyone around?",
    ),
    "identity": (
        "WHAT ARE YOU EVEN??", "r u a human or nah", "who am i even talking to lol", "Are you some kind of chatbot?",
        "whats ur deal, who made u", "Hey, are you ChatGPT or something else?", "so are you an actual AI?",
        "Got a name? 🤔", "Introduce yourself, bot.", "what exactly is this program",
    ),
    "capabilities": (
        "WHAT CAN U HELP WITH", "what r u good for", "What sort of things can you do for me?", "how do i use u",
        "ok what are ur skills", "Can you do anything else? What are your limits?", "any ideas what i can ask you?",
        "Show me what you've got!", "how does this chat thing work?", "wat can i ask",
    ),
    "thanks": (
        "THANK YOU SO SO MUCH!!", "ty for the help 😊", "Thank you, that really helped.", "appreciate it man",
        "cheers, that's great", "You're a lifesaver, thanks!", "tysm for this 🙏", "That was super useful.",
        "muchas gracias", "Great answer, I appreciate it.",
    ),
    "out_of_scope": (
        "What is 156 divided by 12?", "12*12", "how do I reverse a list in python", "fix this: print(hello world)",
        "Who painted the Mona Lisa?", "What's the tallest mountain in the world?", "How far away is the sun?",
        "tell me a funny joke", "Why did the chicken cross the road?", "zxcvbnm", "lkjhg poiuy",
        "Translate 'thank you' into Spanish.", "Write a haiku about winter mornings.", "Summarize the news today",
        "what should I cook for dinner?", "Is it going to snow tomorrow?", "Convert 10 miles to km",
        "what does 'serendipity' mean?", "idk", "Explain how a rainbow forms.",
    ),
}
PANELS = {"1": PANEL, "2": PANEL_2}
