"""The gold strings that must not reach a model, per conversation, and a fast scan for them."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

__all__ = ["MIN_GOLD_LENGTH", "Needles", "date_forms", "joint_windows", "json_strings", "model_input"]

MIN_GOLD_LENGTH = 4
_GRAM = 4
_GRAMS = re.compile(r"(?=(.{%d}))" % _GRAM, re.DOTALL)


_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_DAY_MONTH_YEAR = re.compile(r"\b(\d{1,2})\s+(%s)\w*,?\s+(\d{4})\b" % "|".join(m[:3] for m in _MONTHS), re.IGNORECASE)
_ISO_DATE = re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b")


def date_forms(date_time: str) -> list[str]:
    """The usual renderings of a session's date (LoCoMo's "1:56 pm on 8 May, 2023",
    LongMemEval's "2023/05/08 (Mon) 13:56"): "may 2023", "8 may 2023", "may 8, 2023",
    "2023-05-08"... A memory that writes a session's date in another form (a library that
    notes "happened in May 2023") repeats the conversation's own date, not a gold answer. The
    years next to a session's year count too: what "last year" and "next year" said in that
    session resolve to (a library that writes `"last year" -> 2022` computes it, it does not
    leak it)."""
    found: list[tuple[int, int, int]] = []
    for day, month, year in _DAY_MONTH_YEAR.findall(date_time):
        found.append((int(year), [m[:3] for m in _MONTHS].index(month[:3].lower()) + 1, int(day)))
    for year, month, day in _ISO_DATE.findall(date_time):
        if 1 <= int(month) <= 12:
            found.append((int(year), int(month), int(day)))
    forms = []
    for year, month, day in found:
        name = _MONTHS[month - 1]
        forms += [
            str(year - 1),
            str(year + 1),
            f"{name} {year}",
            f"{name}, {year}",
            f"{day} {name} {year}",
            f"{day} {name}, {year}",
            f"{name} {day}, {year}",
            f"{name} {day} {year}",
            f"{year}-{month:02d}-{day:02d}",
            f"{year}-{month:02d}",
            f"{year}/{month:02d}/{day:02d}",
        ]
    return forms


@functools.lru_cache(maxsize=4096)
def _number_pattern(needle: str) -> re.Pattern[str]:
    return re.compile(r"(?<![0-9a-z])" + re.escape(needle) + r"(?![0-9a-z])")


def _stands_in(needle: str, text_lower: str) -> bool:
    """Whether `needle` is in the text: as a substring, or for an all-digit gold ("2022") as a
    number of its own. A library's store is full of uuids and timestamps ("9d020208-...",
    "...:20.920217"): four digits inside one are chance, not a year a model was given."""
    if needle not in text_lower:
        return False
    return not needle.isdigit() or _number_pattern(needle).search(text_lower) is not None


def _grams(text: str) -> frozenset[str]:
    """Every substring of length 4 (a regex findall: faster than slicing in Python)."""
    return frozenset(_GRAMS.findall(text))


class Needles:
    """Gold strings per conversation that must not reach a model, with a fast scan.

    A gold string is a needle for a conversation when it is not in that conversation's
    source text (its session dates in their usual renderings included: `date_forms`). A scan first keeps the needles whose 4-grams all occur in the text, then
    confirms them with a substring test: a 70 kB memory text against ~1,400 needles takes
    milliseconds, not the ~0.1 s of a plain substring loop. A conversation's needles are
    found when it is first scanned (`by_sample`): a pack of one conversation's questions
    reads the other nine conversations' texts not at all.
    """

    def __init__(self, conversations: Sequence[Any], with_summaries: bool, instructions: str = "") -> None:
        """`instructions`: the run's own prompt files (reader template, system message). They are
        fixed, hashed text sent with every question, so a gold that happens to be in them
        ("Not mentioned" is an adversarial answer of LoCoMo and part of the refusal
        instruction) counts as source text rather than a leak."""
        from memorybench.data import iter_questions

        gold_of: dict[str, str] = {}
        for q in iter_questions(conversations):
            for gold in q.gold_strings():
                needle = gold.strip().lower()
                if len(needle) >= MIN_GOLD_LENGTH:
                    gold_of.setdefault(needle, q.question_id)
        self.gold_of = gold_of
        self.maxlen = max((len(n) for n in gold_of), default=0)
        self._grams = {n: _grams(n) for n in gold_of}
        self._conversations = list(conversations)
        self._with_summaries = with_summaries
        self._instructions = instructions.lower()
        #: the needles of each conversation's index, found on first use
        self._found: dict[int, list[tuple[str, frozenset[str]]]] = {}
        #: sample id -> the needles of its conversation; None (a file that belongs to no known
        #: conversation) -> the golds in no conversation's text
        self.by_sample = _BySample(self, {c.sample_id: i for i, c in enumerate(self._conversations)})
        self._cache: dict[tuple[str | None, Any], tuple[str, ...]] = {}

    def _needles(self, index: int) -> list[tuple[str, frozenset[str]]]:
        """The needles of the conversation at `index`: the golds not in its source text."""
        if index not in self._found:
            c = self._conversations[index]
            text = c.text_blob()
            # its session dates in the forms a memory may write them: the conversation's own, not gold
            text += "\n" + "\n".join(form for session in c.sessions for form in date_forms(session.date_time))
            if self._with_summaries:
                text += "\n" + "\n".join(c.session_summaries[k] for k in sorted(c.session_summaries))
            low = text.lower() + "\n" + self._instructions
            text_grams = _grams(low)
            grams = self._grams
            self._found[index] = [(n, grams[n]) for n in self.gold_of if not (grams[n] <= text_grams and n in low)]
        return self._found[index]

    def _absent_everywhere(self) -> list[tuple[str, frozenset[str]]]:
        absent = set(self.gold_of)
        for index in range(len(self._conversations)):
            absent &= {n for n, _ in self._needles(index)}
        return [(n, self._grams[n]) for n in self.gold_of if n in absent]

    def sample(self, sample_id: Any) -> str | None:
        return sample_id if isinstance(sample_id, str) and sample_id in self.by_sample else None

    def scan(self, sample_id: str | None, text_lower: str, key: Any = None) -> tuple[str, ...]:
        """The needles of `sample_id` found in `text_lower` (cached by `key`, else by the text)."""
        cache_key = (sample_id, key if key is not None else text_lower)
        hit = self._cache.get(cache_key)
        if hit is None:
            text_grams = _grams(text_lower)
            hit = tuple(n for n, g in self.by_sample[self.sample(sample_id)] if g <= text_grams and _stands_in(n, text_lower))
            self._cache[cache_key] = hit
        return hit


class _BySample(Mapping[Any, list[tuple[str, frozenset[str]]]]):
    """`Needles.by_sample`: its keys are known up front (every sample id, then None), a value
    is found when first read."""

    def __init__(self, needles: Needles, index: dict[str, int]) -> None:
        self._needles = needles
        self._index = index  # a sample id -> its (last) conversation
        self._none: list[tuple[str, frozenset[str]]] | None = None

    def __getitem__(self, sample_id: Any) -> list[tuple[str, frozenset[str]]]:
        if sample_id is None:
            if self._none is None:
                self._none = self._needles._absent_everywhere()
            return self._none
        return self._needles._needles(self._index[sample_id])

    def __contains__(self, sample_id: object) -> bool:
        return sample_id is None or sample_id in self._index

    def __iter__(self) -> Iterator[Any]:
        yield from self._index
        yield None

    def __len__(self) -> int:
        return len(self._index) + 1


def joint_windows(texts: list[str], reach: int) -> Iterable[str]:
    """At each joint of the concatenated texts, the `reach` characters on either side:
    a needle no longer than reach + 1 that crosses a joint lies inside one of these windows."""
    if reach <= 0:
        return
    for i in range(1, len(texts)):
        left, j = "", i - 1
        while len(left) < reach and j >= 0:
            left = texts[j][max(0, len(texts[j]) - (reach - len(left))) :] + left
            j -= 1
        right, j = "", i
        while len(right) < reach and j < len(texts):
            right += texts[j][: reach - len(right)]
            j += 1
        yield left + right


def json_strings(value: Any) -> Iterable[str]:
    """Every string value in a JSON value, depth first.

    Object keys and numbers are left out: they are the record's field names and counts,
    not text a model was given, and a short gold ("sage") would otherwise be found inside
    a key ("messages") of every writer call.
    """
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_strings(item)


def model_input(request: dict[str, Any]) -> dict[str, Any]:
    """A recorded request as far as it carries text from outside the model: the response
    format (our task schema) and the model's own earlier replies (assistant turns of a
    repair) are left out of the gold scan, as its `response` is."""
    out = {k: v for k, v in request.items() if k != "response_format"}
    if isinstance(out.get("messages"), list):
        out["messages"] = [m for m in out["messages"] if not (isinstance(m, dict) and m.get("role") == "assistant")]
    return out
