"""LoCoMo's answer scoring, ported from the released ``task_eval/evaluation.py``.

The LoCoMo paper's F1 numbers come from that file, so our port must give the same float
for the same (prediction, gold, category), quirks included (DESIGN.md 5.1):

* ``normalize_answer`` deletes commas, lowercases, deletes ASCII punctuation *without*
  inserting a space (``self-care`` -> ``selfcare``, ``7:30`` -> ``730``), replaces the
  whole words ``a|an|the|and`` by a space and collapses whitespace. Curly quotes and other
  non-ASCII punctuation survive.
* Token F1 Porter-stems every token (NLTK's ``PorterStemmer()`` in its default mode).
* Category rules: 1 splits both sides on ``,``; 3 keeps the gold text before the first
  ``;``; 5 ignores the gold and looks for an abstention phrase.

Two things are taken from the same libraries on purpose rather than rewritten: the
article regex runs on the third-party ``regex`` module (as the release does; its ``\\b``
treats combining marks as word characters, unlike ``re``; text where the two agree, such as
ASCII, runs it on ``re``: `SAME_WORDNESS`), and the category-1 mean is
``numpy.mean``'s (its pairwise summation differs from ``sum()/n`` in the last bit from
eight gold parts on), reproduced bit for bit by ``numpy_mean`` so that scoring a row does
not import numpy. ``regex`` comes with ``nltk``.

``exact_match`` and ``token_f1`` are *ours*, not LoCoMo's: extra columns we report beside
the official number, built on the same normalization.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import string
import sys
import threading
import types
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from numbers import Integral
from typing import Any

__all__ = [
    "CATEGORIES",
    "exact_match",
    "locomo_score",
    "normalize_answer",
    "stemmed_tokens",
    "stems",
    "token_f1",
]

#: LoCoMo's category numbers, in the meaning of its own scorer (see CATEGORY_NAMES).
CATEGORIES: tuple[int, ...] = (1, 2, 3, 4, 5)

#: Phrases whose presence in the lowercased prediction scores a category-5 row as 1.
ABSTENTION_PHRASES: tuple[str, ...] = ("no information available", "not mentioned")

_PUNCTUATION = frozenset(string.punctuation)
#: the article pattern, compiled by `regex` on first use (a plan lists the scorers, never normalizes)
_ARTICLES: Any = None
_ARTICLES_PATTERN = r"\b(a|an|the|and)\b"
#: the same pattern on `re`, for text where both modules' `\b` fall in the same places
#: (`_same_boundaries`): importing `regex` costs more than a small pack's whole `verify`
_ARTICLES_RE = re.compile(_ARTICLES_PATTERN)
#: Unicode categories whose every character is a word character for both `re` and `regex`
#: (letters, decimal digits) or for neither (spaces, punctuation but the connector kind, and
#: symbols but `So`, which holds letter-like signs): `\b` is where a word character meets a
#: non-word one, so over text of these only the two modules agree everywhere. Not here:
#: marks (word characters for `regex` only), other numbers such as `²` (for `re` only),
#: connector punctuation, format characters (the joiners), `So` and unassigned code points.
#: tests/score/test_locomo.py checks every code point of these categories against `regex`.
SAME_WORDNESS = frozenset(
    {"Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Zs", "Zl", "Zp", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk"}
)


_PORTER_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    """NLTK's Porter stemmer (`nltk.stem.porter.PorterStemmer`, the class LoCoMo's scorer
    uses), imported on first use without the rest of NLTK (`porter_class`), with its
    consonant test as a loop (`without_recursion`)."""
    return without_recursion(porter_class())()


def without_recursion(porter: type) -> type:
    """NLTK's `PorterStemmer` whose consonant test walks back over a run of `y` instead of
    recursing once per letter: the same stems, for any token length.

    Porter's rule: `y` is a consonant at the start of a word or after a vowel, a vowel after
    a consonant. NLTK's `_is_consonant` asks the letter before each `y` by recursion, so a
    token of 1,000 `y` (a small model that loops) raises RecursionError and no row of the
    pack can be scored; and `_measure`, which asks every position, is quadratic in a run of
    `y`. Here a run of `y` alternates from its first letter, decided by the letter before
    the run, and `_measure` and `_contains_vowel` read one pass of those flags. Every other
    rule is NLTK's own code. Where NLTK returns, the stems are equal
    (tests/score/test_porter_loop.py: every token of locomo10.json, random words rich in
    `y`); where it raises, the stem is the one NLTK's code gives with a stack deep enough
    (the same test runs it so), which is the value the released scorer defines."""

    class PorterWithoutRecursion(porter):  # type: ignore[misc, valid-type]
        def _is_consonant(self, word: str, i: int) -> bool:
            letter = word[i]
            if letter in self.vowels:
                return False
            if letter != "y":
                return True
            start = i
            while start > 0 and word[start - 1] == "y":
                start -= 1
            # the run's first y: a consonant at the word's start or after a vowel
            first = start == 0 or word[start - 1] in self.vowels
            return first if (i - start) % 2 == 0 else not first

        def _consonant_flags(self, word: str) -> list[bool]:
            flags: list[bool] = []
            previous = False  # as if after a vowel: a leading y is a consonant
            for letter in word:
                previous = False if letter in self.vowels else (not previous if letter == "y" else True)
                flags.append(previous)
            return flags

        def _measure(self, stem: str) -> int:
            return "".join("c" if c else "v" for c in self._consonant_flags(stem)).count("vc")

        def _contains_vowel(self, stem: str) -> bool:
            return not all(self._consonant_flags(stem))

    PorterWithoutRecursion.__qualname__ = f"{porter.__qualname__}WithoutRecursion"
    return PorterWithoutRecursion


def porter_class() -> type:
    """NLTK's `PorterStemmer` class from its own module, without running `nltk/__init__.py`,
    which imports all of NLTK (scipy among it: about 1.1 s of a 2.6 s `show`). The two
    modules the stemmer needs (`nltk.stem.porter`, `nltk.stem.api`: the same installed
    files, so the same rules) are loaded under placeholder parents, which are then taken
    out of `sys.modules`: a later `import nltk` (BLEU-1) loads NLTK whole, as before. Where
    NLTK is loaded already, its own class is used."""
    with _PORTER_LOCK:  # one thread at a time: another must never meet the placeholder parents
        if "nltk.stem.porter" in sys.modules:
            return sys.modules["nltk.stem.porter"].PorterStemmer
        if sys.modules.get("nltk") is not None:  # NLTK is loaded whole already: its own class
            from nltk.stem.porter import PorterStemmer

            return PorterStemmer
        return _porter_alone()


def _porter_alone() -> type:
    """`porter_class`'s load of the two stemmer modules under placeholder parents."""
    spec = importlib.util.find_spec("nltk")
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError("nltk is not installed; reinstall memorybench (./setup.sh)")
    root = list(spec.submodule_search_locations)[0]
    before = set(sys.modules)
    for name, folder in (("nltk", root), ("nltk.stem", f"{root}/stem")):
        placeholder = types.ModuleType(name)
        placeholder.__path__ = [folder]
        sys.modules[name] = placeholder
    try:
        return importlib.import_module("nltk.stem.porter").PorterStemmer
    finally:
        for name in set(sys.modules) - before:
            if name == "nltk" or name.startswith("nltk."):
                del sys.modules[name]


Gold = str | int | None


def _articles() -> Any:
    global _ARTICLES
    import regex  # the release's module (its \b differs from re's); imported when first scored

    _ARTICLES = regex.compile(_ARTICLES_PATTERN)
    return _ARTICLES


def _same_boundaries(text: str) -> bool:
    """Whether `re` and the release's `regex` see the same word boundaries in `text`."""
    return text.isascii() or all(ch.isascii() or unicodedata.category(ch) in SAME_WORDNESS for ch in text)


def normalize_answer(text: str) -> str:
    """LoCoMo's ``normalize_answer``: the order of the steps matters and is kept.

    Commas go first (on the raw text), then lowercase, then ASCII punctuation is dropped
    in place, then articles and ``and`` become spaces, then whitespace is collapsed.
    """
    text = text.replace(",", "")
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    articles = _ARTICLES_RE if _same_boundaries(text) else _ARTICLES or _articles()
    text = articles.sub(" ", text)
    return " ".join(text.split())


def _f1_of_tokens(prediction_tokens: Sequence[str], gold_tokens: Sequence[str]) -> float:
    """Multiset token F1; no shared token gives 0 (also when both sides are empty)."""
    common = Counter(prediction_tokens) & Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def stemmed_tokens(text: str) -> list[str]:
    """The tokens LoCoMo's F1 counts, in order and with repeats: `normalize_answer`, whitespace
    split, Porter stem (TRACE.md shows them to explain a score)."""
    return [_stem(token) for token in normalize_answer(text).split()]


_stemmed_tokens = stemmed_tokens


@lru_cache(maxsize=200_000)
def _stem(token: str) -> str:
    return _stemmer().stem(token)


def stems(text: str) -> set[str]:
    """The distinct tokens LoCoMo's F1 compares: `normalize_answer`, whitespace split, Porter
    stem (the report's gold-token drop and the per-question blame count these)."""
    return {_stem(token) for token in normalize_answer(text).split()}


def _locomo_f1(prediction: str, gold: str) -> float:
    """LoCoMo's ``f1_score``: stemmed multiset token F1 of two normalized strings."""
    return _f1_of_tokens(_stemmed_tokens(prediction), _stemmed_tokens(gold))


def _locomo_multi_answer_f1(prediction: str, gold: str) -> float:
    """LoCoMo's ``f1`` (category 1): both sides split on ``,`` and stripped; each gold
    part takes its best F1 over the prediction parts; the result is their mean."""
    predictions = [part.strip() for part in prediction.split(",")]
    golds = [part.strip() for part in gold.split(",")]
    best = [max(_locomo_f1(p, g) for p in predictions) for g in golds]
    return numpy_mean(best)


def numpy_mean(values: Sequence[float]) -> float:
    """``float(numpy.mean(values))`` of a non-empty list of floats, bit for bit, without
    importing numpy (`verify` and `show` score rows; numpy's import is most of their
    start-up): numpy's pairwise sum of a float64 array, from 0.0, divided by n.
    tests/score/test_numpy_mean.py compares the two on thousands of random lists."""
    floats = [float(v) for v in values]
    return (0.0 + _pairwise_sum(floats, 0, len(floats))) / len(floats)


def _pairwise_sum(a: list[float], lo: int, n: int) -> float:
    """numpy's `pairwise_sum_DOUBLE` (numpy/_core/src/umath/loops_utils.h.src) over a[lo:lo+n]:
    below 8 a plain sum; up to 128 eight running sums combined as a tree, then the rest; above
    that the two halves (split at a multiple of 8), each summed the same way."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    if n <= 128:
        r = a[lo : lo + 8]
        i, whole = 8, n - n % 8
        while i < whole:
            for j in range(8):
                r[j] += a[lo + i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for k in range(lo + i, lo + n):
            res += a[k]
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_sum(a, lo, n2) + _pairwise_sum(a, lo + n2, n - n2)


def _check_prediction(prediction: object) -> str:
    if not isinstance(prediction, str):
        raise TypeError(f"prediction must be a str, got {type(prediction).__name__}: {prediction!r}")
    return prediction


def _gold_text(gold: Gold, what: str) -> str:
    """The gold as LoCoMo scores it: ``str(answer)``, so int answers work; None is an error
    because only category 5 has rows without an ``answer``, and it ignores the gold."""
    if gold is None:
        raise ValueError(f"{what} needs a gold answer, got None (only category 5 may have no gold)")
    if isinstance(gold, bool) or not isinstance(gold, (str, Integral)):
        raise TypeError(f"gold must be a str or an int, got {type(gold).__name__}: {gold!r}")
    return str(gold)


def locomo_score(prediction: str, gold: Gold, category: int) -> float:
    """The LoCoMo F1 of one answer, exactly as the released ``eval_question_answering``.

    1 (multi-hop): comma-split multi-answer F1. 2 (temporal), 4 (single-hop): token F1.
    3 (open-domain): token F1 against the gold before its first ``;``. 5 (adversarial):
    1.0 if the lowercased prediction contains an abstention phrase, else 0.0; the gold is
    ignored and may be None.
    """
    prediction = _check_prediction(prediction)
    # Compared by value, as the release does, so numpy integers from pandas work.
    if isinstance(category, bool) or category not in CATEGORIES:
        raise ValueError(f"unknown LoCoMo category {category!r}; choices: 1, 2, 3, 4, 5")
    if category == 5:
        lowered = prediction.lower()
        return 1.0 if any(phrase in lowered for phrase in ABSTENTION_PHRASES) else 0.0
    answer = _gold_text(gold, f"category {category}")
    if category == 1:
        return _locomo_multi_answer_f1(prediction, answer)
    if category == 3:
        answer = answer.split(";")[0].strip()
    return _locomo_f1(prediction, answer)


def exact_match(prediction: str, gold: str | int) -> float:
    """Ours, not LoCoMo's: 1.0 when both normalize to the same non-empty string.

    LoCoMo's own ``exact_match_score`` compares *sets* of tokens and is not part of its QA
    score; we report the stricter string equality. An empty normalized answer never
    matches, so a blank prediction cannot score on a gold such as ``"The"``.
    """
    normalized_prediction = normalize_answer(_check_prediction(prediction))
    normalized_gold = normalize_answer(_gold_text(gold, "exact_match"))
    return 1.0 if normalized_gold and normalized_prediction == normalized_gold else 0.0


def token_f1(prediction: str, gold: str | int, *, stem: bool = False) -> float:
    """Ours, not LoCoMo's: multiset token F1 of the normalized strings, no category rules.

    Unstemmed by default (the plain SQuAD-style number); ``stem=True`` Porter-stems like
    LoCoMo's F1 does. No shared token gives 0.0, also for two empty answers.
    """
    prediction_text = normalize_answer(_check_prediction(prediction))
    gold_text = normalize_answer(_gold_text(gold, "token_f1"))
    prediction_tokens = prediction_text.split()
    gold_tokens = gold_text.split()
    if stem:
        prediction_tokens = [_stemmer().stem(t) for t in prediction_tokens]
        gold_tokens = [_stemmer().stem(t) for t in gold_tokens]
    return _f1_of_tokens(prediction_tokens, gold_tokens)
