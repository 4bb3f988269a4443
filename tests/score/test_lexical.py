"""Mem0's lexical F1 and BLEU-1 (memorybench.score.lexical) against DESIGN.md 5.2.

Values marked "released" were computed once with mem0's evaluation/metrics/utils.py at
ece7ff6b84b3e55336fcf2e17253b074d2d5166d (``calculate_metrics(...)["f1"]`` and
``calculate_bleu_scores(...)["bleu1"]``) on the same inputs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import nltk
import pytest

from memorybench.errors import UserError
from memorybench.score.lexical import mem0_bleu1, mem0_f1
from memorybench.score.lexical import NltkDataMissingError, set_nltk_data_dir

PINS = Path(os.environ.get("MEMORYBENCH_PINS") or Path(__file__).resolve().parents[2].parent / "shared" / "pins")
NLTK_DATA = PINS / "nltk_data"
LOCOMO10 = PINS / "data" / "locomo10.json"


@pytest.fixture(autouse=True)
def pinned_punkt(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test uses the pinned punkt_tab, and any attempt to download fails loudly."""

    def no_download(*args: object, **kwargs: object) -> None:
        raise AssertionError("the scorer must never download NLTK data")

    monkeypatch.setattr(nltk, "download", no_download)
    set_nltk_data_dir(NLTK_DATA)
    yield
    set_nltk_data_dir(NLTK_DATA)


# --- F1 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("Paris, France!", "paris", 2 / 3),  # {paris, france} vs {paris}
        ("The cat sat.", "the dog sat", 2 / 3),
        ("7 May 2023", "7 May, 2023", 1.0),  # commas are separators
        ("She went to the U.S.A. in May", "May", 0.2),  # dots split "u.s.a." into three tokens
        ("yes yes yes", "yes", 1.0),  # sets, not multisets
        ("I don't know", "do not know", 1 / 3),  # apostrophes and other punctuation stay
        ("running dogs", "runs dog", 0.0),  # no stemming
        ("self-care", "selfcare", 0.0),
        ("3", 3, 1.0),  # int gold scored as str(gold)
        ("", "x", 0.0),
        ("x", "", 0.0),
        ("   ", "x", 0.0),
        ("...", "x", 0.0),
    ],
)
def test_mem0_f1(prediction: str, gold: str | int, expected: float) -> None:
    assert mem0_f1(prediction, gold) == pytest.approx(expected)


def test_mem0_f1_released_values_bit_for_bit() -> None:
    assert mem0_f1("She went to the U.S.A. in May", "May") == 0.19999999999999998
    assert mem0_f1("I don't know", "do not know") == 0.3333333333333333


def test_mem0_rejects_a_missing_gold() -> None:
    with pytest.raises(ValueError, match="None"):
        mem0_f1("x", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="None"):
        mem0_bleu1("x", None)  # type: ignore[arg-type]


# --- BLEU-1 --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        # [paris , france !] vs [paris]: unigram precision 1/4, no brevity penalty
        ("Paris, France!", "paris", 0.25),
        # [yes yes yes] vs [yes]: clipped counts, 1/3
        ("yes yes yes", "yes", 1 / 3),
        # [7 may 2023] vs [7 may , 2023]: precision 1, brevity penalty exp(1 - 4/3)
        ("7 May 2023", "7 May, 2023", 0.7165313105737893),
        # [i do n't know] vs [do not know]: treebank splits "don't" -> do n't; 2/4
        ("I don't know", "do not know", 0.5),
        ("The cat sat.", "the dog sat", 0.5),
        ("3", 3, 1.0),
        ("running dogs", "runs dog", 0.0),
        ("", "x", 0.0),
        ("x", "", 0.0),
    ],
)
def test_mem0_bleu1(prediction: str, gold: str | int, expected: float) -> None:
    assert mem0_bleu1(prediction, gold) == pytest.approx(expected)


def test_mem0_bleu1_released_values_bit_for_bit() -> None:
    assert mem0_bleu1("7 May 2023", "7 May, 2023") == 0.7165313105737893
    assert mem0_bleu1("She went to the U.S.A. in May", "May") == 0.14285714285714285


def test_bleu1_reads_the_pinned_punkt_tab() -> None:
    mem0_bleu1("Dr. Smith went home. He slept.", "Dr. Smith went home.")
    found = Path(str(nltk.data.find("tokenizers/punkt_tab/english/")))
    assert found.resolve() == (NLTK_DATA / "tokenizers" / "punkt_tab" / "english").resolve()


def test_missing_punkt_tab_says_to_fetch(tmp_path: Path) -> None:
    set_nltk_data_dir(tmp_path)
    with pytest.raises(NltkDataMissingError, match="memorybench fetch") as caught:
        mem0_bleu1("x", "x")
    assert isinstance(caught.value, RuntimeError)
    assert isinstance(caught.value, UserError)


def test_default_folder_comes_from_memorybench_pins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYBENCH_PINS", str(PINS))
    set_nltk_data_dir(None)
    assert mem0_bleu1("yes", "yes") == 1.0

    monkeypatch.setenv("MEMORYBENCH_PINS", str(tmp_path))
    set_nltk_data_dir(None)
    with pytest.raises(NltkDataMissingError, match="memorybench fetch"):
        mem0_bleu1("yes", "yes")


# --- the real data -------------------------------------------------------------------


def test_every_gold_scores_itself() -> None:
    if not LOCOMO10.is_file():
        pytest.fail(f"{LOCOMO10} is missing: tests read the pinned files from ../shared/pins")
    data = json.loads(LOCOMO10.read_text("utf-8"))
    golds = [qa["answer"] for conv in data for qa in conv["qa"] if qa["category"] != 5]
    assert len(golds) == 1540  # Mem0 skips category 5
    for gold in golds:
        assert mem0_f1(str(gold), gold) == 1.0
        assert mem0_bleu1(str(gold), gold) == 1.0
        assert mem0_f1("zebra xylophone", gold) == 0.0
        assert 0.0 <= mem0_bleu1("not mentioned", gold) < 1.0
