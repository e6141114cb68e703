"""Training-only small talk built from parts: lead × core × tail, and for thanks a second sentence of praise.

The fixed bodies of chat_compose meet each intent's words in a few set phrases; a panel of prompts written
outside the project (2026-12-03) showed both demos reading thanks without the word "thank" ("much obliged",
"thx a ton 🙏", "Thanks! That's exactly what I needed.") as a request, and jokes and keyboard mashing as thanks.
Parts recombine into thousands of phrasings, so the intent has to come from the words, not from the whole
string. Pure data and one builder; chat_compose keeps every built phrase off its held-out bodies and the panel.
"""

from __future__ import annotations

from . import chat_praise

# (leads, cores, tails): a phrase is lead + core + tail, each part optional where it holds "".
PARTS = {
    "thanks": (
        ("", "", "", "great", "perfect", "awesome", "cool", "nice", "ok", "brilliant", "wonderful", "amazing",
         "excellent", "lovely", "fantastic", "sweet", "wow", "oh", "right", "super", "fab", "neat", "splendid",
         "alright", "wicked", "sound", "yes"),
        ("thanks", "thank you", "thx", "ty", "cheers", "much appreciated", "appreciate it", "many thanks",
         "thank u", "thanks heaps", "tnx", "thnks", "thankyou", "thanku", "obliged", "grateful", "bless you",
         "kudos", "props", "big thanks", "ta very much", "appreciated", "i'm grateful", "i'm obliged",
         "i owe you", "you're a star", "you're a gem", "my thanks", "gratitude", "thanks loads",
         # 2026-12-05: abbreviations, appreciation and praise as the thanks itself, thanks in other languages.
         "thanks much", "thx so much", "tq", "thks", "tks", "thanx", "thnx", "tyvm", "tysm", "ty so much",
         "thank you kindly", "appreciate you", "appreciate the help", "i appreciate that", "really appreciate it",
         "you're a legend", "legend", "you're the best", "you're awesome", "you rock", "you saved me",
         "you saved my day", "nice one", "good job", "well done", "great work", "merci", "gracias", "danke",
         "grazie", "thanks a million", "thank you thank you", "thanks thanks", "i'm thankful", "much obliged",
         "you're so kind", "how kind", "bless", "sending thanks",
         # 2026-12-07: thanks in other languages beyond the one word: with thinking on the DiffusionGemma demo gave
         # "merci beaucoup" the about line on three outsider panels (4, 14, 15).
         "merci beaucoup", "merci bien", "mille mercis", "muchas gracias", "mil gracias", "gracias amigo",
         "danke schön", "danke schon", "vielen dank", "grazie mille", "obrigado", "obrigada", "arigato",
         "arigatou", "domo arigato", "dankjewel", "dank je", "tack så mycket", "takk", "kiitos", "spasibo",
         "shukran", "asante", "salamat", "terima kasih", "dhanyavaad", "shukriya", "mahalo", "xie xie"),
        ("", "", "", "for the help", "a lot", "so much", "a ton", "for that", "again", "very much",
         "for your help", "for the answer", "mate", "dude", "man", "buddy", "my friend", "bot", "a bunch",
         "loads", "tons", "big time", "heaps", "a million", "from me", "for real", "so so much",
         "to you", "for everything", "for your time", "kindly", "x100",
         # What the thanks is for, naming what other prompts ask for: "thanks for the joke" is thanks, "tell me a
         # joke" is not, so the intent has to come from the thanks, not from the topic.
         "for the joke", "for the translation", "for the summary", "for the code", "for the recipe",
         "for the tips", "for the info", "for explaining", "for the quick answer", "for the fix", "for the poem",
         "for helping me", "for sorting that out", "for the advice", "for the maths", "for your patience"),
    ),
    "greeting": (
        ("", "", "hi", "hey", "hello", "yo", "heya", "hiya", "howdy", "greetings", "oh hey", "well hello", "hullo",
         "good morning", "morning", "good evening", "evening", "afternoon", "hey hey", "hi hi", "helloo", "sup"),
        ("", "there", "friend", "bot", "buddy", "pal", "everyone", "all", "you", "mate", "folks", "dude",
         "again", "stranger", "little model", "demo", "world", "robot"),
        ("", "", "how are you", "how's it going", "what's up", "how are you doing", "how's your day", "you good",
         "how's things", "nice to meet you", "long time", "you around", "how have you been", "hows life",
         "how r u", "wassup", "are you there", "can you hear me", "anybody home", "all good", "how you doing",
         "hope you're well", "what's new", "how's your morning", "good to see you", "how do you do"),
    ),
    "identity": (
        ("", "", "", "so", "quick one,", "honestly", "wait", "just curious,", "um", "hey", "ok but", "seriously"),
        ("who are you", "what are you", "what's your name", "are you a bot", "are you an ai", "what model are you",
         "who made you", "are you human", "what should i call you", "who am i talking to", "are you a real person",
         "what kind of ai are you", "who built you", "are you a robot", "which model is this", "are you gpt",
         "who r u", "wat r u", "ur name", "are you a person", "who created you", "what is this bot"),
        ("", "", "", "exactly", "anyway", "really", "again", "by the way", "then", "actually", "lol", "rn",
         "tho", "for real", "just curious"),
    ),
    "capabilities": (
        ("", "", "", "so", "ok", "hey", "um", "quick question", "just wondering", "right", "well"),
        ("what can you do", "what can you help with", "how can you help", "what are you good at",
         "what should i ask", "what can i ask", "what do you do", "what are your features", "how do i use you",
         "what are you capable of", "what can i try", "what are your skills", "what things can you do",
         "what's this good for", "how does this work", "wat can u do", "what r ur skills", "any tips"),
        ("", "", "", "for me", "here", "exactly", "today", "in this app", "besides chatting", "then", "lol",
         "anyway", "actually", "at all", "right now"),
    ),
}
# A second sentence people add to a thanks ("Thanks! That did it."), or put first.
PRAISE = ("that works", "that helped", "that did it", "works now", "all sorted", "problem solved",
          "that makes sense", "got it", "that's perfect", "you nailed it", "spot on", "that's what i was after",
          "i get it now", "super clear", "that was quick", "exactly right", "just what i wanted", "that fixed it",
          "really useful", "that's great", "you're the best", "huge help", "made my day", "that clears it up",
          "that was exactly it", "you've been a huge help", "that answers my question", "you explained it well",
          "great explanation", "now i understand", "makes sense now", "i learned a lot", "so helpful",
          "that's really helpful", "this is so useful", "you made it easy", "that saved me hours", "what a help")
# Appreciation as the whole message ("That was so helpful."): a share of thanks phrases are praise alone, and of
# the rest a share are built by chat_praise's grammar (praise of the bot, relief, a verdict; no thanks word).
PRAISE_ALONE = 0.15
BUILT_PRAISE = 0.3


def carrier(intent: str) -> list[str]:
    """The part of `intent`'s phrases that says the intent (a greeting's leads, another intent's cores), without
    the empty choices; in PARTS' order, repeats kept, so a draw from it is the draw build() makes."""
    leads, cores, _ = PARTS[intent]
    return [part for part in (leads if intent == "greeting" else cores) if part]


def build(rng, intent: str, bare: float = 0.0) -> str:
    """One phrase for `intent` from its parts (thanks sometimes with a sentence of praise around it); with
    probability `bare` only the part that says the intent (a greeting's lead, another intent's core), alone."""
    leads, cores, tails = PARTS[intent]
    if bare and rng.random() < bare:
        return rng.choice(carrier(intent))
    if intent == "thanks" and rng.random() < PRAISE_ALONE:
        return " ".join(part for part in (rng.choice(leads), rng.choice(PRAISE)) if part)
    if intent == "thanks" and rng.random() < BUILT_PRAISE:
        return chat_praise.praise(rng)
    lead, core, tail = rng.choice(leads), rng.choice(cores), rng.choice(tails)
    words = " ".join(part for part in (lead, core, tail) if part)
    if intent == "greeting" and not words:
        words = "hi"
    if intent == "thanks" and rng.random() < 0.35:
        praise = rng.choice(PRAISE)
        mark = rng.choice((". ", "! ", ", ", "!! "))
        words = words + mark + praise if rng.random() < 0.6 else praise + mark + words
    return words
