"""The DiffusionGemma demo's answers, thinking on, for the prompt and setting pairs that the twenty-fourth pass's grids
garbled (five never closed their thought) and two defaults misses: python probe_closing.py MODEL_FOLDER."""

import sys

import engine
from engine.events import Finished
engine.prepare_process()
m = engine.load(sys.argv[1])
cases=[("omg it works now!!",0.5,2),("omg it works now!!",1.0,2),("omg it works now!!",1.0,3),("omg you're amazing 😍",0.5,2),
       ("omg you're amazing 😍",1.0,2),("nice one, exactly what i needed",0.5,2),("traffic was AWFUL today",None,None),("merci beaucoup",None,None)]
for prompt,t,s in cases:
    st = engine.Settings.from_dict({} if t is None else {"temp":t,"seed":s})
    for ev in engine.generate(m, messages=[{"role":"user","content":prompt}], settings=st, think=True):
        if isinstance(ev, Finished):
            print(f"{prompt!r} T{t} s{s} | R: {ev.reasoning.strip()!r} | C: {ev.content.strip()!r}")
