"""Thanks with no thanks word in it, built from parts, and the everyday remarks that share its words but are not
thanks. Training only: chat_compounds draws the praise, chat_out_of_scope the remarks.

Why: four panels written outside the project (2026-12-07) found both demos reading praise of the bot ("you're
awesome", "u r the best bot ever 🙌", "Good bot. Really helpful.") and relief ("phew, that's a relief", "omg it works
now") as questions about themselves, and everyday remarks ("it's raining again. typical.", "my cat just knocked my
coffee over lol") as thanks. Training had praise as a fixed list of phrases; here it is a grammar, so what says
thanks is the praise itself (you're + a quality, a good + thing, relief + it works), and the remarks open with the
same interjections ("omg", "phew", "finally") and talk in the same "you're" / "it works" shapes without being thanks
("you're wrong", "it still doesn't work", "phew it's hot today").
"""

from __future__ import annotations

YOU_ARE = ("you're", "you are", "youre", "ur", "u r", "you really are", "honestly you're", "man you're",
           "wow you're", "you're just", "you've been", "you were")
QUALITIES = ("amazing", "awesome", "the best", "brilliant", "a genius", "incredible", "fantastic", "a lifesaver",
             "a legend", "a star", "a gem", "so helpful", "so smart", "the goat", "a champ", "a hero", "wonderful",
             "a wizard", "unreal", "magic", "so good at this", "the best bot ever", "top notch", "so clever",
             "a godsend", "super helpful", "the real mvp", "a rockstar", "class", "ace", "the greatest", "so kind",
             "a big help", "really good", "spot on", "a saint", "the best thing ever", "epic", "a beast", "gold")
GOOD = ("good", "great", "nice", "clever", "smart", "best", "amazing", "helpful", "brilliant", "top", "solid",
        "excellent", "awesome", "lovely", "perfect", "fab", "cracking", "stellar")
THINGS = ("bot", "answer", "job", "stuff", "work", "explanation", "advice", "help", "tip", "one", "response",
          "reply", "suggestion", "idea", "robot", "assistant")
RELIEF = ("phew", "finally", "omg", "yay", "yes", "woohoo", "oh nice", "whew", "at last", "hallelujah", "wow",
          "yesss", "ahh", "oh wow", "sweet", "boom", "yesss finally", "oh my god", "lets go", "woo")
WORKS = ("it works", "it works now", "that worked", "it's working", "it finally works", "fixed", "that fixed it",
         "problem solved", "sorted", "all good now", "that's a relief", "what a relief", "it ran", "the error's gone",
         "no more errors", "it compiled", "it's fixed", "crisis averted", "that did the trick", "it's working now",
         "works like a charm", "that solved it", "all fixed", "it actually worked", "my code runs now")
VERDICTS = ("really helpful", "very helpful indeed", "super useful", "so useful", "exactly what i needed",
            "just what i needed", "perfect answer", "that was great", "great stuff", "top answer", "10/10",
            "five stars", "a+", "love it", "love this", "nailed it", "you nailed it", "chef's kiss", "mind blown",
            "couldn't have asked for better", "that's perfect", "best answer ever", "that made my day",
            "you made my day", "so clear", "crystal clear now", "that was fast", "quick and perfect",
            "you're a natural", "impressive", "very impressive", "well explained", "brilliant explanation")
TAILS = ("", "", "", "", " honestly", " seriously", " lol", " haha", "!!", "!", " tbh", " fr", " omg", " bot",
         " mate", " dude", " x", " <3", " 🙌", " 🎉", " 😭", " 🥳", " 💯", " 🙏", " ⭐", " 👏", " 😍", " 🔥")


def praise(rng) -> str:
    """One thanks with no thanks word: praise of the bot, a good thing it did, relief that it works, a verdict on
    the answer, or two of them ("phew, that worked. you're a star")."""
    shape = rng.randrange(5)
    if shape == 0:
        text = f"{rng.choice(YOU_ARE)} {rng.choice(QUALITIES)}"
    elif shape == 1:
        text = f"{rng.choice(GOOD)} {rng.choice(THINGS)}"
        if rng.random() < 0.4:
            text = rng.choice(("what a ", "such a ", "very ", "really ")) + text
    elif shape == 2:
        text = f"{rng.choice(RELIEF)}{rng.choice((' ', ', ', '! ', '!! ', '... '))}{rng.choice(WORKS)}"
    elif shape == 3:
        text = rng.choice(VERDICTS)
    else:
        first, second = rng.sample((f"{rng.choice(YOU_ARE)} {rng.choice(QUALITIES)}", rng.choice(VERDICTS),
                                    f"{rng.choice(GOOD)} {rng.choice(THINGS)}", rng.choice(WORKS)), 2)
        text = first + rng.choice((". ", "! ", ", ", " - ")) + second
    return text + rng.choice(TAILS)


# The remarks' own pools, for chat_out_of_scope's "remarks" patterns.
REMARK_POOLS = {
    "interjection": ("ugh", "omg", "lol", "phew", "wow", "man", "sigh", "oh no", "welp", "well", "honestly",
                     "finally", "yay", "ok so", "guess what", "bruh", "oof", "wow ok", "hmm"),
    "pet": ("cat", "dog", "hamster", "parrot", "kid", "toddler", "puppy", "neighbour", "flatmate", "baby"),
    "mishap": ("knocked my coffee over", "ate my homework", "won't stop barking", "is sick", "broke my phone",
               "yelled at me", "is late again", "forgot my birthday", "cancelled on me", "burnt the toast",
               "lost my keys", "spilled juice everywhere", "woke me up at 5", "took my charger", "is being annoying",
               "scratched the sofa", "left the door open", "keeps calling me"),
    "weather": ("raining", "so hot", "freezing", "snowing", "so windy", "sunny", "grey", "humid", "pouring"),
    "life": ("got a new job", "passed my driving test", "am moving house", "just woke up", "missed the bus",
             "got a puppy", "am so tired", "can't find my keys", "have a cold", "start uni tomorrow",
             "burnt my dinner", "lost my wallet", "am stuck in traffic", "just got home", "have an exam tomorrow",
             "ran 5k today", "am on holiday", "need coffee", "broke up with my boyfriend", "got a promotion"),
    "complaint": ("you're wrong", "you're useless", "you're so slow", "bad bot", "that's not what i asked",
                  "that didn't work", "it still doesn't work", "it's still broken", "wrong answer", "you're boring",
                  "that makes no sense", "still getting the error", "nope, still broken", "you're not helping",
                  "that was useless", "it crashed again"),
}
REMARK_PATTERNS = ("{interjection} my {pet} just {mishap}", "my {pet} {mishap}", "my {relation} {mishap}",
                   "{interjection} my {relation} {mishap} today", "{interjection} it's {weather} again",
                   "it's {weather} again. typical", "{interjection} i {life}", "i {life} today",
                   "guess what, i {life}", "{interjection}, i {life}", "{complaint}", "{interjection} {complaint}",
                   "{complaint}. {interjection}", "{interjection} it's {weather} today", "so i {life}",
                   "my {pet} {mishap} lmao", "{interjection}. my {relation} {mishap}")
