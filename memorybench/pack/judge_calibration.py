"""A judge's calibration (`judge_calibration.v2`): how often it accepts answers known to be wrong,
and how often it accepts the right answers themselves, per question kind of one benchmark.

`memorybench judge-check` (`memorybench.stages.judge_check`) writes it beside the judge's
response cache, keyed by the judge's identity (`JudgeIdentity`: protocol, model, prompt
sha256, temperature, response format), so that any later J by that judge can carry it:

    <paths.cache>/judge_check/<judge id>/all/calibration.json         every question of categories 1-4
    <paths.cache>/judge_check/<judge id>/prefix-<N>/calibration.json  the first N questions (max_questions=N)

The comparison layer calls `load_calibration(identity or judge id, cache_dir)`: the widest
calibration stored for that judge (all questions before any prefix, then the longest
prefix), or None for a judge never calibrated (it prints "not calibrated").
`Calibration.summary()` is the line printed beside J (or beside another benchmark's figure).
The sets are the benchmark's (its record's `judge_sets` module): LoCoMo's are the deliberately
wrong answers of the LoCoMo audit dial481/locomo-audit (`ap_v1_specific_wrong.json`,
`ap_v2_vague_wrong.json`) and LoCoMo's gold answers judged against themselves; BEAM's are made
from its pinned 128K tier (benchmarks/beam/judge_sets.py). The record names the benchmark, each
set's words, and what "accepted" means: a CORRECT label, or for a judge that scores (BEAM's
rubric judge) a score at or above `pass_level`.

v2 added those (`benchmark`, `title`, the kinds' words, each set's `label` and `words`,
`right_set`, `summary_order`, `pass_level`, `acceptance`, `accepted`); a v1 record, all
LoCoMo's, is read as the v2 record with LoCoMo's values (`upgrade_v1`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from memorybench.benchmark import DEFAULT as DEFAULT_BENCHMARK, plural_of
from memorybench.errors import UserError
from memorybench.pack.autorater_schemas import JudgeIdentity
from memorybench.records import Record, load_json

__all__ = [
    "CALIBRATION_DIR",
    "CALIBRATION_FILE",
    "DEFAULT_CACHE",
    "SETS",
    "Calibration",
    "Rate",
    "SetRates",
    "calibration_folder",
    "calibration_line",
    "calibration_scope",
    "kinds_phrase",
    "load_calibration",
    "stored_calibrations",
    "upgrade_v1",
]

#: the `paths.cache` default (conf/paths/default.yaml), relative to the current directory
DEFAULT_CACHE = "outputs/cache"
#: the folder under `paths.cache` that holds every judge's checks
CALIBRATION_DIR = "judge_check"
CALIBRATION_FILE = "calibration.json"
#: LoCoMo's three sets (a v1 record's), in the order they are judged and printed: name -> words of the summary
SETS: dict[str, str] = {
    "specific_wrong": "specific wrong answers",
    "vague_wrong": "vague wrong answers",
    "gold": "gold answers",
}
#: a v1 record's sets: name -> (the table's label, the summary's words), in the summary's order
_V1_SETS: dict[str, tuple[str, str]] = {
    "vague_wrong": ("vague wrong", "vague wrong answers"),
    "specific_wrong": ("specific wrong", "specific ones"),
    "gold": ("gold", "gold"),
}
SCHEMA_V1 = "judge_calibration.v1"
NOT_CALIBRATED = "not calibrated"


class Rate(Record):
    """The share of a set's answers the judge labelled CORRECT, with a conversation-level interval
    (`memorybench.compare.intervals.mean_interval`, clusters = each question's conversation)."""

    #: accepted / judged; null when nothing was judged
    rate: Optional[float] = None
    low: Optional[float] = None
    high: Optional[float] = None
    #: answers labelled CORRECT
    accepted: int
    #: answers with a readable label (FAILED verdicts are not in the rate)
    judged: int
    #: verdicts without a label (a reply that does not parse, a call that failed after its retries)
    failed: int
    #: conversations the judged answers sit in
    conversations: int
    #: how the interval was made
    method: str
    #: why an interval is missing, when it is
    note: Optional[str] = None


class SetRates(Record):
    """One set's acceptance: over every kind checked together, and per kind ("1".."4" of LoCoMo's categories)."""

    overall: Rate
    by_category: dict[str, Rate]
    #: where the set's answers come from (pinned file, repository, commit, sha256), or how they are made
    source: dict[str, Any]
    #: its row in the printed table ("specific wrong") and its words in the summary ("specific ones")
    label: str = ""
    words: str = ""


class Calibration(Record, schema="judge_calibration.v2"):
    """`<paths.cache>/judge_check/<judge id>/<scope>/calibration.json`: one judge-check of one judge."""

    #: `identity.judge_id`, the folder name
    judge_id: str
    identity: JudgeIdentity
    #: `identity.sha256()`: what a caller holding an identity matches
    identity_sha256: str
    #: the benchmark whose questions were checked (`Benchmark.name`) and its name in a sentence
    benchmark: str = DEFAULT_BENCHMARK
    title: str = "LoCoMo"
    #: what a question kind is called ("category", "ability"), the table's column heading of one
    #: ("cat " + its number), and each kind's name where the table gives a legend
    kind_word: str = "category"
    kind_header: str = "cat "
    kind_names: dict[str, str] = {}
    #: the question kinds checked (LoCoMo's categories 1-4, BEAM's abilities 1-10)
    categories: list[int]
    #: questions of those kinds checked (1,540 for the whole of LoCoMo)
    questions: int
    #: true when only a prefix of the dataset's questions was checked (`max_questions`)
    is_prefix: bool
    #: the prefix: the first N questions of the dataset in file order, every kind (null: all)
    max_questions: Optional[int] = None
    #: per set, in judging order (LoCoMo: specific_wrong, vague_wrong, gold)
    sets: dict[str, SetRates]
    #: the set of right answers, and the order the summary names the sets in
    right_set: str = "gold"
    summary_order: list[str] = list(_V1_SETS)
    #: a verdict's score at or above which its answer counts as accepted (a judge that scores:
    #: BEAM's rubric judge); null: its label says (CORRECT)
    pass_level: Optional[float] = None
    #: what "accepted" means, in words
    acceptance: str = "labelled CORRECT"
    #: every set's overall rate, by set
    accepted: dict[str, Optional[float]] = {}
    #: the overall rates of the wrong sets every benchmark has and of the right answers, for a
    #: caller that wants numbers only (MLflow's metrics)
    specific_wrong_accepted: Optional[float] = None
    vague_wrong_accepted: Optional[float] = None
    gold_accepted: Optional[float] = None
    #: the model id sent, and the models that answered
    model_sent: str
    models_answered: list[str]
    local_judge: bool = False
    confidence: float
    #: the judge config as composed (no secrets: keys are never in config)
    judge_config: dict[str, Any]
    #: the template's file (copied into the check's folder) and its sha256
    prompt: dict[str, Any]
    #: the pinned dataset the questions and right answers come from (its name, file or folder, sha256)
    dataset: dict[str, Any]
    requests: int
    #: requests answered from the response cache (a re-check is free)
    cached: int
    created_at: str
    notes: list[str] = []

    def scope(self) -> str:
        return calibration_scope(self.max_questions if self.is_prefix else None)

    def summary(self) -> str:
        """The line printed beside J, e.g. "accepts 63% of vague wrong answers, 11% of specific ones,
        98% of gold (categories 1-4, 1,540 questions)"; a prefix says so, and a judge that scores
        says what accepted means."""
        scope = f"{kinds_phrase(self.kind_word, self.categories)}, {self.questions:,} questions"
        if self.is_prefix:
            scope += f"; prefix of {self.max_questions:,}"
        if self.local_judge:
            scope += "; embedded local judge"
        if self.pass_level is not None:
            scope += f"; accepted: {self.acceptance}"
        said = ", ".join(
            f"{_pct(self.sets[name].overall.rate)} of {self.sets[name].words or name}"
            for name in self.summary_order
            if name in self.sets
        )
        return f"accepts {said} ({scope})"


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A v1 record (every one LoCoMo's: its three sets, a CORRECT label) as the v2 record says it."""
    if data.get("schema") != SCHEMA_V1:
        return data
    sets = {
        name: {**rates, **dict(zip(("label", "words"), _V1_SETS.get(name, (name, name))))}
        for name, rates in (data.get("sets") or {}).items()
    }
    accepted = {name: (rates.get("overall") or {}).get("rate") for name, rates in sets.items()}
    return {**data, "schema": Calibration.SCHEMA, "sets": sets, "accepted": accepted}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def kinds_phrase(kind_word: str, kinds: list[int]) -> str:
    """ "categories 1-4", "abilities 1-10", "category 2"."""
    plural = kind_word if len(kinds) == 1 else plural_of(kind_word)
    return f"{plural} {_categories(kinds)}"


def _categories(categories: list[int]) -> str:
    ordered = sorted(categories)
    if ordered and ordered == list(range(ordered[0], ordered[-1] + 1)) and len(ordered) > 2:
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(str(c) for c in ordered)


def calibration_scope(max_questions: int | None) -> str:
    """The scope folder's name: `all`, or `prefix-<N>` for the first N questions."""
    return "all" if max_questions is None else f"prefix-{int(max_questions)}"


def _cache_root(cache_dir: str | os.PathLike[str] | None) -> Path:
    return Path(cache_dir if cache_dir is not None else DEFAULT_CACHE).expanduser().resolve()


def _judge_id(identity_or_judge_id: JudgeIdentity | Mapping[str, Any] | str) -> tuple[str, str | None]:
    """The judge id and, when an identity is given, its sha256."""
    if isinstance(identity_or_judge_id, JudgeIdentity):
        return identity_or_judge_id.judge_id, identity_or_judge_id.sha256()
    if isinstance(identity_or_judge_id, Mapping):
        identity = JudgeIdentity.model_validate({"schema": JudgeIdentity.SCHEMA, **dict(identity_or_judge_id)})
        return identity.judge_id, identity.sha256()
    return str(identity_or_judge_id), None


def calibration_folder(judge_id: str, max_questions: int | None, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """`<cache>/judge_check/<judge id>/<scope>/`: where one judge-check writes."""
    return _cache_root(cache_dir) / CALIBRATION_DIR / judge_id / calibration_scope(max_questions)


def stored_calibrations(
    identity_or_judge_id: JudgeIdentity | Mapping[str, Any] | str,
    cache_dir: str | os.PathLike[str] | None = None,
) -> list[Calibration]:
    """Every calibration stored for this judge, widest first: all questions, then prefixes, longest first.
    With an identity, only calibrations of exactly that identity (its sha256) count."""
    judge_id, sha = _judge_id(identity_or_judge_id)
    folder = _cache_root(cache_dir) / CALIBRATION_DIR / judge_id
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob(f"*/{CALIBRATION_FILE}")):
        try:
            data = load_json(path.read_bytes())
            calibration = Calibration.model_validate(upgrade_v1(data) if isinstance(data, dict) else data)
        except (OSError, ValueError) as e:
            reason = str(e).splitlines()[0]
            raise UserError(
                f"{path} is not a judge calibration ({reason}); delete it and run `memorybench judge-check` again"
            ) from None
        if calibration.judge_id != judge_id or (sha is not None and calibration.identity_sha256 != sha):
            continue
        found.append(calibration)
    return sorted(found, key=lambda c: (c.is_prefix, -(c.max_questions or 0), -c.questions))


def load_calibration(
    identity_or_judge_id: JudgeIdentity | Mapping[str, Any] | str,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Calibration | None:
    """The calibration of a judge (a `JudgeIdentity`, its fields as a mapping, or its judge id),
    from `cache_dir` (the config's `paths.cache`; default `outputs/cache`): the check over all
    questions if there is one, else the longest prefix check; None for a judge never calibrated."""
    stored = stored_calibrations(identity_or_judge_id, cache_dir)
    return stored[0] if stored else None


def calibration_line(
    identity_or_judge_id: JudgeIdentity | Mapping[str, Any] | str,
    cache_dir: str | os.PathLike[str] | None = None,
) -> str:
    """`load_calibration(...).summary()`, or "not calibrated" for a judge never checked."""
    calibration = load_calibration(identity_or_judge_id, cache_dir)
    return NOT_CALIBRATED if calibration is None else calibration.summary()


def find_calibration(
    identity_or_judge_id: JudgeIdentity | Mapping[str, Any] | str | None,
    cache_dirs: Any = (),
) -> Calibration | None:
    """A judge's calibration from the first of `cache_dirs` (the runs' `paths.cache`) that holds
    one, else from the default cache (`outputs/cache`); None for no judge or one never checked."""
    if not identity_or_judge_id:
        return None
    for folder in dict.fromkeys([*cache_dirs, None]):
        found = load_calibration(identity_or_judge_id, folder)
        if found is not None:
            return found
    return None


def cache_dir_of(config: Any) -> str | None:
    """A run's `paths.cache` from its resolved config (a mapping), where the judge's
    calibration and the response cache live; None when the config does not say."""
    paths = config.get("paths") if isinstance(config, Mapping) else None
    cache = paths.get("cache") if isinstance(paths, Mapping) else None
    return str(cache) if cache else None
