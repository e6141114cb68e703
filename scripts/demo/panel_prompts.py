"""A held-out panel of what people actually type at the demos, written by hand outside the training data.

Ten per chat intent (all caps, slang and abbreviations, typos, emoji, multi-sentence, thanks as a statement or
as appreciation, greetings as questions) and twenty out-of-scope prompts (maths, code, facts, jokes, gibberish)
whose right answer is the about line. Composition never makes any of them (chat_compose's guard); five differ
from a fixed training phrasing only in case or punctuation ("HELLO?", "THANK YOU"), which
scripts/demo/panel_overlap.py reports. bench/eval_demo.py --panel measures the demos on them.
"""

from __future__ import annotations

from .panel_prompts_fresh import PANEL_12, PANEL_13, PANEL_14, PANEL_15
from .panel_prompts_late import PANEL_8, PANEL_9, PANEL_10, PANEL_11

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

# A third panel, written on 2026-12-06 by a helper that never read this repository (its brief: ordinary
# variety, the same shape), so neither its strings nor its kinds were chosen by anyone who had seen the training
# data. Some of its strings are common enough to be training phrasings too; bench/README.md reports them apart.
PANEL_3 = {
    "greeting": (
        "hey!", "good evening 🙂", "yo whats up", "how are you doing today?", "HELLOOO",
        "hi there, hope you're having a nice day", "helo", "Morning! Just popping in to say hi.", "hiya bot 👋",
        "sup",
    ),
    "identity": (
        "who am i talking to", "are you a bot?", "what model is this", "what are you exactly?", "r u human or AI lol",
        "Who made you?", "wat r u", "Is this a real person or a program?",
        "tell me about yourself, what kind of assistant are you", "whats ur name",
    ),
    "capabilities": (
        "what can u do", "what are you good at?", "how can you help me", "list your features",
        "What kind of things can I ask you?", "wat can this bot do??", "any skills i should know about?",
        "So what are you able to help with?", "show me what you're capable of", "What tasks do you support?",
    ),
    "thanks": (
        "thx", "ty so much!!", "cheers", "that was really helpful", "Perfect. Thanks a lot!", "THANK YOU 🙏",
        "thnaks man", "appreciate it", "merci beaucoup", "Great, you've been a big help. Much appreciated!",
    ),
    "out_of_scope": (
        "what's 17*23", "solve x^2=9", "whats the square root of 144",
        "if i have 3 apples and eat one how many are left", "write a python function to reverse a list",
        "how do i center a div in css", "fix my sql pls: SELEC * FROM users", "capital of australia?",
        "who won the world cup in 2018", "How tall is Mount Everest?", "when did ww2 end", "tell me a joke",
        "know any good puns? 😂", "translate 'good morning' into spanish", "summarise this article for me",
        "give me a recipe for banana bread", "asdfghjkl", "qwpeoriu zxmcnv", "banana", "should I quit my job?",
    ),
}
# A fourth panel, written on 2026-12-06 by a helper that never read this repository (the same brief as the
# third), so that a pass chosen on the first three panels is measured once more on phrasings nobody tuned it to.
PANEL_4 = {
    "greeting": (
        "yo", "Good morning! ☀️", "hey there, you around?", "HELLO???", "hiya, how's it going",
        "evening bot... long day huh", "sup 👋", "Hi! Hope you're doing well today.", "heyyy whats up",
        "hola! anyone home?",
    ),
    "identity": (
        "who are you", "What's your name?", "are u a real person or a bot??", "WHICH MODEL ARE YOU RUNNING ON",
        "who made you? like which company", "am i talking to an AI rn 🤔", "so what exactly are you... a program?",
        "Do you have a name or should I just call you bot", "r u human", "Who built this assistant? Just curious.",
    ),
    "capabilities": (
        "what can you do", "What kind of stuff can you help me with?", "wat are u for exactly",
        "can u do anything useful lol", "WHAT ARE YOUR SKILLS",
        "Before I start... what are your limits? Anything you can't do?", "how can you help me today? 🙂",
        "what r ur features", "Is there a list of things you're able to help with?", "what's this bot even good for",
    ),
    "thanks": (
        "thanks!", "ty", "thx so much 🙏", "tysm!!", "That was super useful, appreciate it.", "lifesaver 😭",
        "THANK YOU", "ok cool, thanks. that's all i needed", "merci beaucoup", "much appreciated...",
    ),
    "out_of_scope": (
        "whats 17 * 24", "Can you calculate 15% of 380?", "write a python function that reverses a string",
        "Why does my JavaScript say 'undefined is not a function'? Help pls", "what's the capital of australia",
        "When did the Berlin Wall fall?", "HOW FAR IS THE MOON FROM EARTH", "tell me a joke",
        "Write me a short poem about rain 🌧️", "translate 'where is the train station' into spanish",
        "How do you say good night in Japanese?", "give me a recipe for banana bread",
        "what can i make with eggs rice and spinach?", "should i quit my job to start a business?? kinda scared",
        "Any tips for sleeping better? I keep waking up at 3am.",
        "Summarize this: The meeting covered Q3 budget cuts and the new hiring freeze.",
        "tldr of the french revolution pls", "asdfghjkl", "jjjjjjjj kdkdk ;;;", "recommend a good sci-fi book",
    ),
}
# A fifth panel, written on 2026-12-07 by a helper that never read this repository (the same brief, asking for
# regional and non-native phrasings too), after the twentieth pass had added held keys to the training mashing.
PANEL_5 = {
    "greeting": (
        "HEYYY 👋",
        "good morning!! hope ur doing well",
        "hiya, anyone there?",
        "G'day mate",
        "Namaste ji 🙏",
        "hellooo there",
        "yo wassup?",
        "Hey, how's it going today?",
        "evening all 😊",
        "Hello, good afternoon to you sir.",
    ),
    "identity": (
        "wats ur name lol",
        "are u a real person or a bot??",
        "WHO MADE YOU",
        "r u human",
        "Sorry, may I know whom I am chatting with?",
        "is this an AI or am I talking to an actual human",
        "which company built you?",
        "what exactly are you, some kind of chatbot?",
        "do you have a name or shall i just call you bot",
        "Kindly tell me who is your creator.",
    ),
    "capabilities": (
        "so what are you able to help me with?",
        "wat can u do",
        "what sort of things can I ask you?",
        "Can you help me with anything or do you just chat?",
        "WHAT ARE YOUR FEATURES",
        "what are your limits? like what can't you do",
        "Please tell me your functions and how to use you.",
        "how can you be useful to me 🤔",
        "any list of commands or stuff u support?",
        "Are you able to do things like book tickets, or is it just talking?",
    ),
    "thanks": (
        "cheers mate, legend",
        "thx so much!!",
        "ty 🙏",
        "that helped a lot, appreciate it",
        "THANK YOU SO MUCH",
        "Thank you very much for your kind help.",
        "ta, that's brilliant",
        "much appreciated 👍",
        "oh nice that's exactly what i needed",
        "thnks for the help, u r awesome",
    ),
    "out_of_scope": (
        "what's 17 times 23",
        "can u solve 2x + 5 = 15",
        "Whats the square root of 144?",
        "how much is 15% of 80 dollars",
        "how do i reverse a list in python",
        "write me a javascript function that checks if a number is prime",
        "my java code throws NullPointerException pls help",
        "What does SELECT * FROM users do in SQL?",
        "what's the capital of australia",
        "who won the world cup in 2018?",
        "How tall is Mount Everest",
        "when did world war 2 end",
        "make me laugh, say something funny 😂",
        "write a short poem about my cat",
        "can you tell me a bedtime story about dragons",
        "what should I cook for dinner tonight",
        "set an alarm for 7am tomorrow",
        "jjjjjjjjjjjjjjjjjjjjjj",
        "qzx pwlk, vrrt?? mnb;",
        "#$%&*@!!~~^^",
    ),
}

# A sixth panel, written on 2026-12-07 by another helper that never read this repository (the brief), before
# the twenty-first pass's training, which never saw it.
PANEL_6 = {
    "greeting": (
        "hi",
        "Hello there!",
        "hey whats up",
        "HEYYY 👋",
        "good morning!!",
        "how are you doing today?",
        "yo, how's it going??",
        "Hiya",
        "Good evening sir, how are you keeping?",
        "sup bot",
    ),
    "identity": (
        "who are you?",
        "whats ur name",
        "WHO MADE YOU",
        "are you a real person or a bot?",
        "r u chatgpt??",
        "Which company built you?",
        "are u human 🤔",
        "what kind of AI are you exactly",
        "Tell me about yourself. Are you a robot?",
        "Kindly tell me your good name",
    ),
    "capabilities": (
        "what can you do?",
        "what can u help me with",
        "WHAT ARE YOUR LIMITS",
        "can you browse the internet?",
        "Do you remember our past chats?",
        "what kind of questions can i ask u??",
        "Are you able to read images or pdfs?",
        "what r ur features pls",
        "Is there anything you can't do? Just curious.",
        "can u speak other languages besides english",
    ),
    "thanks": (
        "thanks!",
        "thx a lot 🙏",
        "THANK YOU SO MUCH!!",
        "that was really useful",
        "you saved my day",
        "great, exactly what I was after",
        "ty ur the best",
        "Much appreciated, cheers mate",
        "perfect, that's just what i needed 👌",
        "Very helpful answer, I am grateful to you",
    ),
    "out_of_scope": (
        "what is seven times eight",
        "2^10 = ?",
        "whats 15% of 240",
        "solve for x: 3x + 5 = 20",
        "write a python function to reverse a string",
        "TypeError: 'NoneType' object is not subscriptable how fix??",
        "how do i center a div in css",
        "pls write SQL to count orders per customer",
        "What is the capital of Australia?",
        "who painted the mona lisa",
        "HOW TALL IS MOUNT EVEREST",
        "when did ww2 end?",
        "tell me a joke about cats 😂",
        "give me a recipe for banana bread",
        "remind me to call mum at 5pm",
        "Write a short poem about rain. Make it sad.",
        "asdfghjkl qwerty zxcv",
        "aaaaaaaaaaaaaaaaaaaaaaaaa",
        "#@!$%^&*()_+",
        "🍕🍕🚀🚀🐸🐸🐸💥",
    ),
}

# A seventh, by a third such helper the same day (thanks phrased as statements, greetings as questions asked for),
# during the twenty-first pass's training, which never saw it.
PANEL_7 = {
    "greeting": (
        "hi",
        "Hey there. Long time no see!",
        "how's ur day going??",
        "GOOD MORNING!!! ☀️",
        "yo wassup",
        "Hello, how are you doing today?",
        "hiii 👋 hope ur having a good one",
        "Good evening sir. Hope all is well with you.",
        "heyyy. its me again lol",
        "Howdy partner, hows it goin?",
    ),
    "identity": (
        "who are you?",
        "whats ur name",
        "Are you a real person or a bot??",
        "WHO MADE YOU",
        "which AI model are u running on rn",
        "r u human tbh",
        "What company created you?",
        "are you chatgpt or something else 🤔",
        "Kindly tell me what is your good name",
        "what exactly are you? like an AI assistant?",
    ),
    "capabilities": (
        "waht can you do?",
        "what kind of stuff can u help me with",
        "Can you browse the internet?",
        "CAN U MAKE IMAGES??",
        "is there anything you're not allowed to do?",
        "do u remember our past convos",
        "What are your limitations?",
        "can you help with homework or nah",
        "Are you able to speak other languages like Spanish?",
        "what are u good at and what r u bad at 😅",
    ),
    "thanks": (
        "thanks!",
        "thx so much 🙏",
        "Thank you, that was really helpful.",
        "THANK U SOOO MUCH!!",
        "thanks a lot mate, cheers",
        "that worked perfectly, u saved my life lol",
        "Great answer. Exactly what I needed.",
        "omg it finally works!! ur a legend 🙌",
        "Much appreciated, very clear explanation.",
        "perfect, that solved my problem. appreciate it!",
    ),
    "out_of_scope": (
        "what is 17 * 23",
        "solve x^2 - 5x + 6 = 0 pls",
        "Integrate sin(x)dx from 0 to π",
        "whats 3/4 + 2/5 as a fraction??",
        "write a python function to reverse a string",
        "TypeError: 'NoneType' object is not subscriptable how fix",
        "how do i center a div in css 😩",
        "pls write SQL query to get top 5 salaries from employees table",
        "What is the capital of Australia?",
        "who won the world cup in 2018",
        "how far is the moon from earth",
        "When did World War 2 end?",
        "tell me a joke",
        "Write a short story about a dragon who is afraid of fire",
        "any tips for a job interview tmrw? im so nervous",
        "book me a table for 2 at an italian place tonight",
        "asdfghjkl",
        "kkkkkkkkkkkkkkkkkkkkkkkkk",
        "#$%&*@!#$%^&*",
        "😂😂😂🔥🔥🔥💀💀",
    ),
}

PANELS = {"1": PANEL, "2": PANEL_2, "3": PANEL_3, "4": PANEL_4, "5": PANEL_5, "6": PANEL_6, "7": PANEL_7,
          "8": PANEL_8, "9": PANEL_9, "10": PANEL_10, "11": PANEL_11, "12": PANEL_12, "13": PANEL_13,
          "14": PANEL_14, "15": PANEL_15}
