"""Code fences parsed from an answer's Markdown, and the revision comparison table (plain data)."""

from __future__ import annotations

from datetime import datetime, timezone

from tui.fences import code_fences
from tui.revision_compare import compare, curve
from tui.store import Revision

ANSWER = """\
Here is some code:

```python title="a.py"
def f():
    return "```"   # backticks inside a line are content
```

Inline ``` ``code`` ``` is not a fence, and neither is this: ``` `x` ```

1. In a list, indented:

    ~~~~sh
    echo one
      echo indented
    ~~~
    still inside: a shorter fence does not close it
    ~~~~

````markdown
```js
nested();
```
````
"""


def test_fences_follow_commonmark_with_any_indentation():
    fences = code_fences(ANSWER)
    assert [(f.language, f.info) for f in fences] == [("python", 'python title="a.py"'), ("sh", "sh"),
                                                       ("markdown", "markdown")]
    assert fences[0].code == 'def f():\n    return "```"   # backticks inside a line are content'
    assert fences[1].code == "echo one\n  echo indented\n~~~\nstill inside: a shorter fence does not close it"
    assert fences[2].code == "```js\nnested();\n```"
    assert fences[0].describe() == "python, 2 lines"


def test_an_open_fence_runs_to_the_end_and_empty_ones_count():
    assert [f.code for f in code_fences("```\n```\ntext\n~~~\nlast line\n")] == ["", "last line"]
    assert code_fences("no code here") == []
    assert code_fences("```\n")[0].describe() == "code, 0 lines"


def _revision(number, settings, stats, content="answer text"):
    return Revision(id=number, message_id=1, number=number, content=content, reasoning="", status="complete",
                    stats=stats, settings=settings, created_at=datetime.now(timezone.utc))


def test_the_comparison_shows_only_settings_that_differ_and_what_each_run_cost():
    one = _revision(1, {"temp": 0.5, "max_tokens": 64}, {
        "finish_reason": "stop", "generated_tokens": 20, "steps_per_block": [6, 4],
        "accepted_per_step": [[8, 0, 0, 0, 0, 0], [4, 4, 4, 4]], "total_s": 1.234, "tokens_per_s": 16.2,
        "prompt_tokens": 30, "encoded_tokens": 30})
    two = _revision(2, {"temp": None, "max_tokens": 64}, {
        "finish_reason": "length", "generated_tokens": 64, "steps_per_block": [2],
        "accepted_per_step": [[16, 16]], "total_s": 0.5, "tokens_per_s": 128.0, "prompt_tokens": 30,
        "encoded_tokens": 2}, content="a much longer answer that will not fit in the column")
    old = _revision(3, None, None)  # made before the app saved settings and stats
    table = compare([one, two, old], shown=2, defaults={"temp": 1.0})
    assert table.columns == ["#1", "#2 (shown)", "#3"]
    rows = dict(table.rows)
    assert rows["temp"] == ["0.5", "default (1.0)", "–"] and "max_tokens" not in rows
    assert rows["steps"] == ["10 (6+4)", "2 (2)", "–"] and rows["blocks"] == ["2", "1", "–"]
    assert rows["accepted/step"] == ["2.40", "16.00", "–"]
    assert rows["time"] == ["1.23 s", "0.50 s", "–"] and rows["tok/s"] == ["16.2", "128.0", "–"]
    assert rows["prompt"] == ["30 (30 encoded)", "30 (2 encoded)", "–"]
    assert rows["finish"] == ["stop", "length", "complete"]
    # One scale for every revision: 16 is the tallest bar anywhere.
    assert rows["per step"][0] == "▅▁▁▁▁▁▃▃▃▃" and rows["per step"][1] == "██"
    assert rows["answer"][1] == "a much longer answe…"
    same = compare([one, one], shown=1, defaults={})
    assert dict(same.rows)["settings"] == ["the same", "the same"]


def test_long_curves_are_bucketed_to_their_width():
    assert curve(list(range(48)), 47, width=4) == "▃▄▆█"  # each bucket its largest: 11, 23, 35, 47
