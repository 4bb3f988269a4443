"""Mem0's lexical metrics (DESIGN.md 5.2), ported from mem0 ``evaluation/metrics/utils.py``
at ece7ff6b84b3e55336fcf2e17253b074d2d5166d as its ``evals.py`` calls them.

Mem0 reports these two numbers beside its LLM judge; they differ from LoCoMo's F1 (set,
not multiset; no stemming; only ``. , ! ?`` count as separators), so they are scored by
their own rules here rather than derived from ``locomo.py``.

BLEU-1 needs NLTK's ``punkt_tab`` english model (``word_tokenize`` splits sentences
first). We never download it: the folder comes from ``set_nltk_data_dir`` or else the
pins folder (``$MEMORYBENCH_PINS``, else the user cache that ``memorybench fetch`` fills),
where it is hash-checked like every other pinned file.
"""

from __future__ import annotations

import os
from numbers import Integral
from pathlib import Path

from memorybench.errors import UserError

__all__ = [
    "NltkDataMissingError",
    "mem0_bleu1",
    "mem0_f1",
    "set_nltk_data_dir",
]

_PUNKT_ENGLISH = Path("tokenizers", "punkt_tab", "english")
_PUNKT_FILES = ("abbrev_types.txt", "collocations.tab", "ortho_context.tab", "sent_starters.txt")
_SEPARATORS = (".", ",", "!", "?")

_configured_dir: Path | None = None
_active_dir: Path | None = None


class NltkDataMissingError(UserError, RuntimeError):
    """The pinned ``punkt_tab`` data is not where we look; the fix is ``memorybench fetch``."""


def set_nltk_data_dir(path: str | os.PathLike[str] | None) -> None:
    """Use ``path`` (a folder holding ``tokenizers/punkt_tab/english``) for BLEU-1.

    ``None`` goes back to the pins folder. Takes effect on the next ``mem0_bleu1`` call.
    """
    global _configured_dir, _active_dir
    _configured_dir = None if path is None else Path(path).expanduser().resolve()
    _active_dir = None


def _resolve_data_dir() -> Path:
    """The nltk_data folder to use: the configured one, else the verified pins copy."""
    if _configured_dir is not None:
        english = _configured_dir / _PUNKT_ENGLISH
        missing = [name for name in _PUNKT_FILES if not (english / name).is_file()]
        if missing:
            raise NltkDataMissingError(
                f"NLTK punkt_tab english data is missing from {english} ({', '.join(missing)}); "
                "run `memorybench fetch` and point set_nltk_data_dir at <pins>/nltk_data"
            )
        return _configured_dir
    from memorybench.data import pins  # imported late: only BLEU-1 needs the pins folder

    try:
        return pins.nltk_data_dir()
    except UserError as error:
        raise NltkDataMissingError(
            f"NLTK punkt_tab data for BLEU-1 is not usable: {error.message} "
            f"(the pins folder comes from ${pins.PINS_ENV}, else the user cache)"
        ) from None


def _activate_punkt() -> None:
    """Put the pinned folder first on ``nltk.data.path`` and make sure NLTK loads from it.

    NLTK caches its sentence tokenizer per language, so a model found earlier on another
    path (say ``~/nltk_data``) would silently win; the cache is cleared when we switch.
    """
    global _active_dir
    import nltk  # imported here: all of NLTK (scipy, scikit-learn) only when BLEU-1 is computed

    if _active_dir is not None and nltk.data.path[:1] == [str(_active_dir)]:
        return
    data_dir = _resolve_data_dir()
    if str(data_dir) in nltk.data.path:
        nltk.data.path.remove(str(data_dir))
    nltk.data.path.insert(0, str(data_dir))
    cached = getattr(nltk.tokenize, "_get_punkt_tokenizer", None)
    if cached is not None and hasattr(cached, "cache_clear"):
        cached.cache_clear()
    _active_dir = data_dir


def _text(value: str | int, what: str) -> str:
    """Mem0's ``evals.py`` scores ``str(answer)``; None has no gold to score against."""
    if value is None:
        raise ValueError(f"{what} is None; Mem0 skips category 5, which is the only one without a gold")
    if isinstance(value, bool) or not isinstance(value, (str, Integral)):
        raise TypeError(f"{what} must be a str or an int, got {type(value).__name__}: {value!r}")
    return str(value)


def _mem0_tokens(text: str) -> set[str]:
    """Mem0's ``simple_tokenize`` as a set: lowercase, ``. , ! ?`` become spaces, split."""
    lowered = text.lower()
    for separator in _SEPARATORS:
        lowered = lowered.replace(separator, " ")
    return set(lowered.split())


def mem0_f1(prediction: str, gold: str | int) -> float:
    """Mem0's lexical F1: F1 over token *sets*; an empty prediction or gold gives 0.0."""
    prediction_text = _text(prediction, "prediction")
    gold_text = _text(gold, "gold")
    if not prediction_text or not gold_text:
        return 0.0
    prediction_tokens = _mem0_tokens(prediction_text.strip())
    gold_tokens = _mem0_tokens(gold_text.strip())
    if not prediction_tokens or not gold_tokens:
        return 0.0
    common = len(prediction_tokens & gold_tokens)
    precision = common / len(prediction_tokens)
    recall = common / len(gold_tokens)
    if precision + recall <= 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def mem0_bleu1(prediction: str, gold: str | int) -> float:
    """Mem0's BLEU-1: NLTK sentence BLEU with unigram weights and smoothing method1.

    Mem0's ``evals.py`` calls its BLEU directly (not through the empty-answer guard of
    its F1), so an empty side is left to NLTK, which scores it 0.
    """
    prediction_text = _text(prediction, "prediction")
    gold_text = _text(gold, "gold")
    import nltk
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    _activate_punkt()
    references = [nltk.word_tokenize(gold_text.lower())]
    hypothesis = nltk.word_tokenize(prediction_text.lower())
    score = sentence_bleu(
        references,
        hypothesis,
        weights=(1, 0, 0, 0),
        smoothing_function=SmoothingFunction().method1,
    )
    return float(score)
