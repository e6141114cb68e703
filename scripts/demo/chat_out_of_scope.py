"""Out-of-scope prompts for the composed small talk: a pattern per kind of sentence over small pools, whose right
answer is the about line. chat_compose splits the patterns by hash, so a held-out pattern is a new *kind of
sentence*; each kind has many patterns, so that holding some out never holds out the kind.

Why the kinds are so many: everything but thanks gets the about line, so what the demos must learn is "not
thanks" for whatever a person may type, and a kind they never saw is read by its surface. Short unknown strings
("asdfghjkl", "knock knock") looked like the thanks abbreviations ("tysm", "ty ty"), and short requests ending in
a full stop like thanks statements. Hence keyboard walks and everyday abbreviations that are not thanks
("brb", "omg"), jokes of several shapes, and requests to work on a text (translate, summarise, rewrite).
"""

from __future__ import annotations

import re

from .chat_praise import REMARK_PATTERNS, REMARK_POOLS

OUT_OF_SCOPE = {
    "maths": ("what is {a} times {b}", "what's {a} + {b}", "{a}+{b}=?", "solve x^2 - {a} = 0", "calculate {a} / {b}",
              "is {a} a prime number", "square root of {a}", "{a} * {b}", "what is {a} minus {b}",
              "how much is {a} percent of {b}", "integrate x^{a}", "{a} plus {b} equals",
              # 2026-12-05: more shapes, so a held-out one is never the only one of its kind.
              "{a} - {b}", "{a}/{b}", "is {a} even or odd", "what is {b} squared",
              "{a} x {b} = ?", "add {a} and {b}", "what's {b}% of {a}", "factorise {a}", "simplify {a}/{b}",
              "{a} + {b} + {n}", "how many {noun}s is {a} plus {b}", "what is the derivative of x^{n}",
              "{a}^{n}", "solve {n}x + {b} = {a}"),
    "code": ("write a python function that {task}", "how do i {task} in javascript", "fix my code: {snippet}",
             "{snippet}", "explain this code: {snippet}", "write a bash script that {task}",
             "how to center a div in css", "what does {snippet} do", "give me a regex that {task}",
             "debug this: {snippet}", "can you write code that {task}", "reverse the word {animal}",
             "write a sql query that {task}", "{snippet} gives me an error", "why does my {proglang} code crash",
             "what is a for loop", "how do i install {package}", "convert this to {proglang}: {snippet}",
             "what is recursion", "how do i exit vim", "write a function in {proglang} that {task}",
             "what's wrong with {snippet}"),
    "facts": ("what's the capital of {place}", "who won the world cup in {year}", "how tall is {thing}",
              "when was {thing} built", "how many legs does a {animal} have", "who wrote {book}",
              "what's the population of {place}", "what's the weather like in {place}", "how far is {place}",
              "what year did {event} happen", "what is the meaning of life", "explain {topic} in one sentence",
              "what is {topic}", "summarise {book}", "what time is it", "what day is it today",
              "who is the president of {place}", "define {topic}", "why is the sky blue", "how does {topic} work",
              "what's the news today", "is it going to rain in {place}",
              "how old is {person}", "where is {place}", "what language do they speak in {place}",
              "when did {person} die", "what's the biggest {animal}", "how many people live in {place}",
              "who invented the {noun}", "what is the speed of light", "tell me about {place}",
              "tell me about {person}", "what do {animal}s eat", "how long do {animal}s live",
              "what is {person} famous for", "when is the next full moon",
              "why do {animal}s {action}", "how are {noun}s made"),
    "creative": ("tell me a joke", "tell me a joke about {animal}s", "knock knock", "write a poem about {topic}",
                 "write me a story about a {animal}", "sing a song", "recommend a good book", "recommend a movie",
                 "translate '{phrase}' into {language}", "give me a fun fact", "write a haiku about {topic}",
                 "what's your favourite {animal}", "make up a riddle", "tell me something funny",
                 "tell me a story", "let's play a game", "play chess with me", "write an essay about {topic}",
                 "give me a recipe for pancakes", "say something nice", "describe a {animal}", "do you like {topic}",
                 "what should i eat tonight", "i'm bored", "i'm sad today", "what do you think about {topic}",
                 "write a limerick about {topic}", "write a song about {topic}", "let's play {game}",
                 "tell me a bedtime story", "tell me a scary story", "roast me", "write a rap about {topic}",
                 "compose a tweet about {topic}", "give me a name for my {animal}", "plan my weekend",
                 "what should i watch tonight", "suggest a gift for my {relation}"),
    # Jokes and games of many shapes: the hand-written panel's joke prompts (and the "tell me a joke" pattern) sat
    # on the held-out side alone, and a joke set up as a question read as thanks.
    "jokes": ("tell me a {adjective} joke", "know any jokes", "got a joke for me", "make me laugh", "tell me a pun",
              "joke pls", "say something funny", "riddle me this",
              "tell me a joke about {topic}", "do you know any good jokes", "i want to hear a joke",
              "what do you call a {adjective} {animal}", "knock knock, who's there", "{word} who",
              "tell me a dad joke", "a {animal} walks into a bar", "give me a {animal} joke", "entertain me",
              "tell me a riddle"),
    "requests": ("how do i {verb} a {noun}", "can you {verb} my {noun}", "what does {word} mean", "list {n} {noun}s",
                 "give me {n} {noun}s", "convert {a} km to miles", "who is {person}", "should i buy a {noun}",
                 "is {noun} healthy", "what's the best {noun}", "compare {noun}s and {noun2}s",
                 "where can i buy a {noun}", "how much does a {noun} cost", "spell {word} backwards",
                 "what rhymes with {word}", "what colour is a {noun}", "{verb} the {noun}", "make me a {noun}",
                 "draw a {noun}", "plan a trip to {place}",
                 "convert {a} {unit} to {unit2}", "how many {unit} in a {unit2}", "remind me to {verb} the {noun}",
                 "set a timer for {n} minutes", "book a table for {n}", "order me a {noun}", "find me a {noun}",
                 "what's a good {noun} to buy", "help me {verb} my {noun}", "teach me {subject}",
                 "explain {subject} to me", "give me tips for {activity}", "how do i get better at {activity}"),
    # Work on a text: translate, summarise, rewrite. Short imperatives ending in a full stop, like many thanks.
    "text": ("how do you say '{phrase}' in {language}", "what's '{phrase}' in {language}",
             "translate this to {language}: {sentence}", "{phrase} in {language}?", "say '{phrase}' in {language}",
             "summarize {book}", "give me a summary of {book}", "what's the plot of {book}", "tl;dr of {book}",
             "summarise the plot of {book}", "rewrite this sentence: {sentence}", "proofread this: {sentence}",
             "fix the grammar: {sentence}", "make this more formal: {sentence}", "paraphrase: {sentence}",
             "write an email to my {relation} about {topic}", "write a cover letter", "explain {topic} like i'm five",
             "shorten this: {sentence}", "is this correct english: {sentence}", "write a speech about {topic}",
             "make a list of {topic} facts", "summarize this article about {topic}", "what's the gist of {book}"),
    "statements": ("{word} {word2}", "{word} {word2} {word3}", "{noun}", "my {noun} is broken", "i like {noun}s",
                   "the {noun} is {adjective}", "{adjective} {noun}", "i have a {noun}", "{person}",
                   "do {noun}s dream", "{word}", "{noun}s are {adjective}", "i lost my {noun}",
                   "{person} is {adjective}", "it is {adjective} today",
                   "i'm tired", "i'm hungry", "it's raining", "my {relation} is {adjective}", "i just got a {noun}",
                   "today is my birthday", "i failed my exam", "i love {noun}s", "{noun}s are the best",
                   "my {noun} smells {adjective}", "i can't sleep", "the {noun} won't start", "it's so {adjective}",
                   "{word} {word}", "i need a new {noun}", "i had {noun2} for lunch", "my {relation} likes {noun}s",
                   "ok", "yes", "no", "maybe", "sure", "nope"),
    # Everyday abbreviations and fillers that are not thanks: "ty", "thx" and "tysm" have to mean thanks by their
    # letters, not by being short.
    "slang": ("brb", "omg", "lol", "lmao", "smh", "fyi", "asap", "np", "gg", "afk", "imo", "tbh", "ikr",
              "nvm", "k", "hmm", "meh", "ugh", "wtf", "bruh", "oof", "yikes", "welp", "ok {slang2}", "{slang2} {slang2}",
              "{slang2} lol", "idc", "ngl", "irl", "ttyl", "rofl", "jk", "pfft", "hmmm ok", "uh", "wow",
              "test", "testing", "testing {digits}", "lorem ipsum", "lorem ipsum dolor sit amet", "blah blah",
              "lalala", "zzz", "asdf", "qwerty"),
    "gibberish": ("{noise}", "{noise} {noise}", "{noise}?", "{noise} {noise} {noise}", "{digits}", "{noise}!!",
                  "{punct}", "{noise}{digits}", "{digits} {noise}", "{noise}...", "{noise} {punct}",
                  "{keys}", "{keys} {keys}", "{keys}{keys}", "{keys}!", "{keys} {noise}", "{keys}?", "{keys}...",
                  # 2026-12-07: a held key ("jjjjjjjj", "ffff tttttt"), two keys in turn ("kdkdk"), symbol and emoji
                  # runs, and mixes of them: held keys read as "ty" / "tysm" and emoji as thanks before.
                  "{held}", "{held} {held}", "{pairs}", "{pairs} {punct}", "{held} {pairs} {punct}", "{held}!!",
                  "{symbols}", "{emoji}", "{noise} {emoji}", "{emoji} {noise}", "{keys} {held}", "{pairs} {noise}",
                  "{held} {emoji}", "{symbols} {noise}", "{noise} {held}", "{pairs}{digits}", "{emoji} {emoji}",
                  "{held} {symbols}", "{pairs} {pairs}", "{held}?", "{keys} {pairs} {punct}"),
    # 2026-12-07: remarks about the day and complaints, in thanks' words ("omg", "finally", "you're", "it works"):
    # outsider panels' "it's raining again. typical." and "my cat just knocked my coffee over lol" read as thanks.
    "remarks": REMARK_PATTERNS,
    # 2026-12-07: made-up words that can be said aloud ("blorptastic zibber flonk", "flibberwocket znarf"): they read
    # as thanks in a language the demo half knows ("merci", "danke" are thanks), where random letters did not.
    "made_up": ("{pseudo}", "{pseudo} {pseudo}", "{pseudo} {pseudo} {pseudo}", "{pseudo}?", "{pseudo}!",
                "{pseudo} {pseudo}?", "{pseudo} {pseudo} {digits}?", "the {pseudo} is {pseudo}",
                "{pseudo} {pseudo} {pseudo} {pseudo}", "{pseudo}... {pseudo}", "{pseudo} {noise}",
                "i {pseudo} the {pseudo}", "{pseudo} {pseudo} lol", "{pseudo} {emoji}", "{pseudo}, {pseudo}!"),
}
POOLS = {
    "task": ("reverses a string", "sorts a list", "counts words", "reads a file", "checks for palindromes",
             "adds two numbers", "parses json", "finds duplicates", "merges two lists", "removes spaces",
             "finds the largest number", "prints the date"),
    "snippet": ("SELECT * FROM users;", "print('hi')", "for i in range(10): print(i)", "console.log(x)",
                "int main() { return 0; }", "git push --force", "ls -la", "x = [1, 2, 3]", "def f(x): return x*2",
                "while True: pass", "rm -rf build", "npm install", "<div>hi</div>", "import numpy as np"),
    "proglang": ("python", "java", "rust", "c++", "go", "javascript", "ruby"),
    "package": ("numpy", "node", "docker", "python", "react", "git"),
    "place": ("australia", "france", "japan", "peru", "canada", "kenya", "norway", "the moon", "london", "brazil",
              "egypt", "iceland", "mexico", "berlin"),
    "year": ("1998", "2006", "2010", "2018", "2022", "1966", "2014"),
    "thing": ("the eiffel tower", "mount everest", "the great wall", "big ben", "the pyramids", "the colosseum"),
    "animal": ("spider", "cat", "dog", "octopus", "penguin", "horse", "ant", "duck", "cow", "owl",
               "whale", "bee"),
    "action": ("sleep", "purr", "migrate", "howl", "hibernate", "swim"),
    "book": ("hamlet", "the odyssey", "moby dick", "pride and prejudice", "dune", "macbeth", "the hobbit",
             "1984", "romeo and juliet"),
    "event": ("the moon landing", "the french revolution", "world war one", "the first flight"),
    "topic": ("quantum computing", "the sea", "autumn", "black holes", "love", "taxes", "photosynthesis", "rain",
              "climate change", "dinosaurs", "the stock market", "gravity", "volcanoes", "friendship"),
    "subject": ("physics", "chemistry", "algebra", "history", "spanish", "economics", "biology"),
    "activity": ("running", "chess", "cooking", "public speaking", "sleeping", "studying", "drawing"),
    "phrase": ("good night", "where is the station", "i love you", "thank you very much", "good morning",
               "how much is this", "see you tomorrow", "cheers", "excuse me", "happy birthday"),
    "sentence": ("me and him goes to school", "their going home", "the meeting is moved to friday",
                 "i has a apple", "we should of left earlier", "the cat sat on the mat"),
    "language": ("french", "german", "spanish", "japanese", "italian", "chinese", "korean", "dutch"),
    "relation": ("boss", "mum", "dad", "friend", "teacher", "landlord", "sister", "brother"),
    "game": ("tic tac toe", "twenty questions", "rock paper scissors", "hangman", "truth or dare", "trivia"),
    "unit": ("feet", "grams", "litres", "inches", "pounds", "cups"),
    "unit2": ("metres", "ounces", "gallons", "centimetres", "kilos", "spoons"),
    "noun": ("car", "phone", "laptop", "bike", "garden", "sandwich", "guitar", "printer", "umbrella", "sofa",
             "camera", "kettle", "tree", "river", "window", "banana", "hat", "clock", "ticket", "battery"),
    "noun2": ("apple", "train", "shoe", "lamp", "cloud", "bottle", "chair", "piano", "bridge", "rocket"),
    "verb": ("fix", "clean", "paint", "repair", "cook", "sell", "wash", "build", "charge", "install"),
    "word": ("banana", "purple", "seven", "ocean", "window", "rocket", "cheese", "silver", "forest", "table",
             "orange", "pencil", "yesterday", "engine", "marble", "tiger", "velvet", "ladder"),
    "word2": ("blue", "jumping", "quietly", "mountain", "paper", "under", "bright", "salt", "circle", "music"),
    "word3": ("soup", "tomorrow", "wheel", "dance", "glass", "north", "stone", "honey", "storm", "basket"),
    "person": ("einstein", "shakespeare", "cleopatra", "newton", "mozart", "napoleon", "picasso", "darwin",
               "da vinci", "beyonce", "gandhi"),
    "adjective": ("red", "cold", "broken", "heavy", "strange", "loud", "green", "expensive", "tiny", "old",
                  "silly", "weird", "bad"),
    "slang2": ("brb", "lol", "omg", "hmm", "ok", "k", "lmao", "bruh", "meh"),
    **REMARK_POOLS,
}
KEYBOARD = "qwertyuiopasdfghjklzxcvbnm"
SYMBOLS = "@#$%^&*()_+=[]<>~|/\\-"   # no braces: a filled pattern is formatted after
# Emoji with no thanks or greeting in them: a bare 🙏, 👍 or ❤️ may well mean thanks.
EMOJI = "😀😂🤣😅🙃😐😶🤔🤨😴🥱😵🤯🥴👀🔥💀👻🤖🎃🌚🌀🎲🧩🍕🌮🥑🐸🦆🐙🌵⚡💥🎈🪐🛸🔔📎"
KEYBOARD_ROWS = ("1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm")
ONSETS = ("b", "bl", "br", "d", "dr", "f", "fl", "fn", "fr", "g", "gl", "gr", "j", "k", "kl", "m", "n", "p", "pl",
          "pr", "qu", "s", "sk", "sl", "sn", "sp", "st", "str", "sh", "ch", "th", "t", "tr", "v", "w", "wh", "z", "zb",
          "zw", "")
VOWELS = ("a", "e", "i", "o", "u", "oo", "ee", "ai", "ou", "y", "ea", "oi")
CODAS = ("", "", "", "rp", "zz", "nk", "mp", "b", "g", "sh", "rf", "x", "t", "ck", "ff", "lt", "nd", "p", "m", "n",
         "rt", "z", "sk", "mble", "ggle", "tastic", "ington", "wump", "ster")


def keyboard_walk(rng) -> str:
    """A run of neighbouring keys along one row ("asdfgh", "poiuy"), as people mash a keyboard."""
    row = rng.choice(KEYBOARD_ROWS[1:]) if rng.random() < 0.9 else KEYBOARD_ROWS[0]
    if rng.random() < 0.3:
        row = row[::-1]
    length = rng.randint(3, len(row))
    start = rng.randint(0, len(row) - length)
    return row[start:start + length]


def held_key(rng) -> str:
    """One key held down: "jjjjjjjj". Long runs too: the demos wrote the right line with a letter wrong once a held
    key ran past the longest they had seen."""
    return rng.choice(KEYBOARD) * _run_length(rng, 3)


def alternating_keys(rng) -> str:
    """Two keys in turn: "kdkdk", "fjfjfjf"."""
    first, second = rng.sample(KEYBOARD, 2)
    return ((first + second) * 20)[:_run_length(rng, 4)]


def made_up_word(rng) -> str:
    """A word that can be said aloud and means nothing: one to three syllables ("zibber", "flonk", "wumpington")."""
    syllables = rng.choice((1, 1, 2, 2, 2, 3))
    return "".join(rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS) for _ in range(syllables))


def _run_length(rng, shortest: int) -> int:
    return rng.randint(shortest, 14) if rng.random() < 0.6 else rng.randint(15, 40)


def _each_slot(rng, pattern: str, slot: str, make) -> str:
    """`pattern` with every `{slot}` replaced by its own `make(rng)`."""
    return re.sub(r"\{" + slot + r"\}", lambda _: make(rng), pattern)


def _run_of(alphabet: str, shortest: int, longest: int):
    return lambda rng: "".join(rng.choice(alphabet) for _ in range(rng.randint(shortest, longest)))


def fill(rng, pattern: str) -> str:
    """One prompt from `pattern`: each pool slot one draw, each {noise} / {digits} / {keys} slot its own run."""
    values = {name: rng.choice(pool) for name, pool in POOLS.items()}
    values["a"], values["b"], values["n"] = rng.randint(2, 999), rng.randint(2, 99), rng.randint(2, 12)
    # Each {noise} of a pattern its own run of keys ("{noise} {noise}" gave "gjwoj gjwoj"); likewise digits.
    pattern = _each_slot(rng, pattern, "noise", _run_of(KEYBOARD, 3, 10))
    pattern = _each_slot(rng, pattern, "digits", _run_of("0123456789", 2, 8))
    pattern = _each_slot(rng, pattern, "keys", keyboard_walk)
    pattern = _each_slot(rng, pattern, "held", held_key)
    pattern = _each_slot(rng, pattern, "pairs", alternating_keys)
    pattern = _each_slot(rng, pattern, "symbols", _run_of(SYMBOLS, 2, 8))
    pattern = _each_slot(rng, pattern, "emoji", _run_of(EMOJI, 1, 5))
    pattern = _each_slot(rng, pattern, "pseudo", made_up_word)
    values["punct"] = "".join(rng.choice("?!.,;:*#") for _ in range(rng.randint(1, 5)))
    return pattern.format(**values)
