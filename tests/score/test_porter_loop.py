"""LoCoMo F1's Porter stemmer without recursion: NLTK's stems, for tokens of any length.

NLTK's `_is_consonant` recurses once per preceding `y`, so a reply of 1,000 `y` made every
row of a pack unscorable (RecursionError). `benchmarks.locomo.score.without_recursion` walks back
instead; these tests hold it to NLTK's own class wherever NLTK returns, and to NLTK's own
code run on a deep stack where it would raise.
"""

from __future__ import annotations

import random
import re
import sys
import threading

import pytest

from memorybench.benchmarks.locomo.score import locomo_score, porter_class, without_recursion

NLTK = porter_class()
OURS = without_recursion(NLTK)


def deep_nltk_stem(word: str) -> str:
    """NLTK's own stemmer on a thread with a stack deep enough for `word`'s runs of `y`."""
    out: list[str] = []
    limit = sys.getrecursionlimit()
    size = threading.stack_size(256 * 1024 * 1024)
    try:
        sys.setrecursionlimit(len(word) * 4 + 1000)
        thread = threading.Thread(target=lambda: out.append(NLTK().stem(word)))
        thread.start()
        thread.join()
    finally:
        threading.stack_size(size)
        sys.setrecursionlimit(limit)
    assert out, "NLTK's stemmer raised even on a deep stack"
    return out[0]


def test_nltk_itself_recurses_on_a_run_of_y() -> None:
    """The failure this module exists for (if NLTK stops recursing, the loop may go)."""
    with pytest.raises(RecursionError):
        NLTK().stem("y" * (sys.getrecursionlimit() + 10))


def test_every_token_of_locomo_stems_as_nltk_does(locomo_raw: list[dict]) -> None:
    tokens: set[str] = set()
    for sample in locomo_raw:
        for value in sample["conversation"].values():
            if isinstance(value, list):
                for turn in value:
                    tokens.update(re.findall(r"[a-z]+", str(turn.get("text", "")).lower()))
        for qa in sample["qa"]:
            tokens.update(re.findall(r"[a-z]+", f"{qa.get('answer', '')} {qa['question']}".lower()))
    assert len(tokens) > 5000
    ours, nltk = OURS(), NLTK()
    differ = [t for t in sorted(tokens) if ours.stem(t) != nltk.stem(t)]
    assert differ == []


def test_random_words_rich_in_y_stem_as_nltk_does() -> None:
    rng = random.Random(20261206)
    ours, nltk = OURS(), NLTK()
    letters = "aeiouyyyyybcdlmnrstwz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 40))) for _ in range(30_000)]
    for run in (1, 2, 3, 50, 301, 600):
        for head in ("", "a", "b", "by", "ay", "syz"):
            for tail in ("", "s", "ies", "ing", "ed", "ational", "ly", "e"):
                words.append(head + "y" * run + tail)
    differ = [w for w in words if ours.stem(w) != nltk.stem(w)]
    assert differ == []


@pytest.mark.parametrize("word", ["y" * 1200, "b" + "y" * 5001 + "ing", "a" + "y" * 4000 + "ies", "y" * 3000 + "ational"])
def test_where_nltk_raises_the_stem_is_what_its_own_code_gives_on_a_deep_stack(word: str) -> None:
    assert OURS().stem(word) == deep_nltk_stem(word)


def test_a_looping_reply_scores_in_every_category() -> None:
    """The red team's rows: 1,200 `y`, 10,000 `y` and 100,000 letters without a space."""
    for prediction in ("y" * 1200, "y" * 10_000, "ab" * 50_000, "teal " + "y" * 10_000):
        for category in (1, 2, 3, 4, 5):
            score = locomo_score(prediction, "teal", category)
            assert 0.0 <= score <= 1.0
    assert locomo_score("teal " + "y" * 10_000, "teal", 4) == pytest.approx(2 / 3)


def test_a_row_no_scorer_can_score_is_one_line_naming_its_question(monkeypatch) -> None:
    """Whatever still cannot be scored is a UserError (one line, no traceback) naming the row."""
    from memorybench.errors import UserError
    from memorybench.score import rows
    from memorybench.score.scorers import Scorer

    def crash(row):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(rows, "scorers", lambda stage="qa": [Scorer("boom", crash, "a scorer that crashes", owner="ours")])
    with pytest.raises(
        UserError, match=r"question 'conv-9-q-4': scorer boom could not score .*RecursionError.*predictions.jsonl"
    ):
        rows.score_row({"question_id": "conv-9-q-4", "prediction": "y" * 50, "gold": "teal", "category": 4})
