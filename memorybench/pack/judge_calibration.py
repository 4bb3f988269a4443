"""A judge's calibration (`judge_calibration.v1`): how often it accepts answers known to be wrong,
and how often it accepts the gold answers themselves, per LoCoMo category 1-4.

`memorybench judge-check` (`memorybench.stages.judge_check`) writes it beside the judge's
response cache, keyed by the judge's identity (`JudgeIdentity`: protocol, model, prompt
sha256, temperature, response format), so that any later J by that judge can carry it:

    <paths.cache>/judge_check/<judge id>/all/calibration.json         every question of categories 1-4
    <paths.cache>/judge_check/<judge id>/prefix-<N>/calibration.json  the first N questions (max_questions=N)

The comparison layer calls `load_calibration(identity or judge id, cache_dir)`: the widest
calibration stored for that judge (all questions before any prefix, then the longest
prefix), or None for a judge never calibrated (it prints "not calibrated").
`Calibration.summary()` is the line printed beside J. The sets are the deliberately wrong
answers of the LoCoMo audit dial481/locomo-audit (`ap_v1_specific_wrong.json`,
`ap_v2_vague_wrong.json`); the gold set is LoCoMo's gold answers judged against themselves.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from memorybench.errors import UserError
from memorybench.pack.autorater_schemas import JudgeIdentity
from memorybench.records import Record

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
    "load_calibration",
    "stored_calibrations",
]

#: the `paths.cache` default (conf/paths/default.yaml), relative to the current directory
DEFAULT_CACHE = "outputs/cache"
#: the folder under `paths.cache` that holds every judge's checks
CALIBRATION_DIR = "judge_check"
CALIBRATION_FILE = "calibration.json"
#: the three sets, in the order they are judged and printed: name -> words of the summary
SETS: dict[str, str] = {
    "specific_wrong": "specific wrong answers",
    "vague_wrong": "vague wrong answers",
    "gold": "gold answers",
}
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
    """One set's acceptance: over categories 1-4 together, and per category ("1".."4")."""

    overall: Rate
    by_category: dict[str, Rate]
    #: where the set's answers come from (pinned file, repository, commit, sha256), or how they are made
    source: dict[str, Any]


class Calibration(Record, schema="judge_calibration.v1"):
    """`<paths.cache>/judge_check/<judge id>/<scope>/calibration.json`: one judge-check of one judge."""

    #: `identity.judge_id`, the folder name
    judge_id: str
    identity: JudgeIdentity
    #: `identity.sha256()`: what a caller holding an identity matches
    identity_sha256: str
    #: the LoCoMo categories checked
    categories: list[int]
    #: questions of those categories checked (1,540 for the whole file)
    questions: int
    #: true when only a prefix of LoCoMo's questions was checked (`max_questions`)
    is_prefix: bool
    #: the prefix: the first N questions of LoCoMo in file order, every category (null: all)
    max_questions: Optional[int] = None
    #: specific_wrong, vague_wrong, gold
    sets: dict[str, SetRates]
    #: the three overall rates, for a caller that wants numbers only
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
    #: the pinned dataset file the questions and gold answers come from
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
        98% of gold (categories 1-4, 1,540 questions)"; a prefix says so."""
        scope = f"categories {_categories(self.categories)}, {self.questions:,} questions"
        if self.is_prefix:
            scope += f"; prefix of {self.max_questions:,}"
        if self.local_judge:
            scope += "; embedded local judge"
        return (
            f"accepts {_pct(self.vague_wrong_accepted)} of vague wrong answers, {_pct(self.specific_wrong_accepted)} "
            f"of specific ones, {_pct(self.gold_accepted)} of gold ({scope})"
        )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


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
            calibration = Calibration.model_validate_json(path.read_bytes())
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
