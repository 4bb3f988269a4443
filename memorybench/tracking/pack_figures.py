"""Figures about one pack that MLflow logs beside its run summary, each computed where the
comparison layer computes it: the interval of each overall over the pack's conversations
(`memorybench.compare.intervals`, as `compare` and `report` give it), what each of its
judges accepts (`memorybench judge-check`'s calibration), and another benchmark's figures
under that benchmark's own names (`benchmark_metrics`)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from memorybench.compare.summary import KIND_SCORERS, judge_key
from memorybench.benchmark import benchmark_named, benchmark_of_pack
from memorybench.score.score_record import scores_of
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.score.scorers import LEXICAL, subset_column

__all__ = ["benchmark_metrics", "calibration_metrics", "interval_metrics"]

#: the metrics named by the scorers' figures over the default benchmark's kinds and overalls (LoCoMo
#: F1's, with its intervals) or by Mem0's J: another benchmark's pack logs none of them (its kinds
#: are not LoCoMo's categories, its judge's figure is not J)
_LEXICAL_OR_J_NAMED = re.compile(
    rf"^(?:(?:{'|'.join(map(re.escape, KIND_SCORERS))})(?:_.*)?|conversations|"
    r"(?:j_mean|j_sd|j_passes|j_agreement|j_cat\d+|j_pass\d+)/.*)$"
)


def calibration_metrics(judge_id: str, pack: str | os.PathLike[str] | PackReader) -> dict[str, float | None]:
    """What a judge accepts, beside its J (`memorybench judge-check`, kept in the run's
    `paths.cache`): `judge_vague_wrong_accepted/<judge id>`, `judge_specific_wrong_accepted/...`,
    `judge_gold_accepted/...`, and a benchmark's other sets alike (`judge_one_side_accepted/...`,
    BEAM's); nothing for a judge never calibrated. Metrics, not params:
    a judge calibrated after its pack was logged updates them."""
    import yaml

    from memorybench.pack.judge_calibration import cache_dir_of, find_calibration

    reader = pack if isinstance(pack, PackReader) else PackReader.open(pack)
    cache = cache_dir_of(yaml.safe_load(reader.read_text(layout.CONFIG)) if reader.exists(layout.CONFIG) else None)
    found = find_calibration(judge_id, [cache] if cache else [])
    if found is None:
        return {}
    figures = {
        judge_key("judge_vague_wrong_accepted", judge_id): found.vague_wrong_accepted,
        judge_key("judge_specific_wrong_accepted", judge_id): found.specific_wrong_accepted,
        judge_key("judge_gold_accepted", judge_id): found.gold_accepted,
    }
    # a benchmark's other sets (BEAM's one_side: an answer that picks one side of a contradiction)
    for name, rate in (found.accepted or {}).items():
        if name not in ("vague_wrong", "specific_wrong", found.right_set):
            figures[judge_key(f"judge_{name}_accepted", judge_id)] = rate
    return figures


def interval_metrics(pack: str | os.PathLike[str] | PackReader) -> dict[str, float | None]:
    """The interval `compare` and `report` give each overall, over the pack's conversations
    (`memorybench.compare.intervals.mean_interval`): `locomo_f1_1_4_ci_low`, `_ci_high`, the
    same for 1-5 where category 5 was asked, and `conversations`. A one-conversation pack
    has no interval (its bounds are not logged)."""
    import csv
    import io

    from memorybench.compare.intervals import mean_interval

    reader = pack if isinstance(pack, PackReader) else PackReader.open(pack)
    if not reader.exists(layout.PREDICTIONS_CSV):
        return {}
    # the scores the pack holds (verify checks them against a rescore): no scoring here
    table = csv.DictReader(io.StringIO(reader.read_text(layout.PREDICTIONS_CSV), newline=""))
    rows = [(int(r["category"]), r["sample_id"], float(r[LEXICAL])) for r in table if r.get(LEXICAL) not in (None, "")]
    held = {c for c, _, _ in rows}
    out: dict[str, float | None] = {"conversations": float(len({s for _, s, _ in rows}))}
    # the default benchmark's overalls (LoCoMo's 1-4 and 1-5), each where all its kinds were asked
    for name, subset in benchmark_named(None).subsets.items():
        kinds = set(subset.kinds)
        if not kinds <= held:
            continue
        found = mean_interval([f for c, _, f in rows if c in kinds], [s for c, s, _ in rows if c in kinds])
        column = subset_column(name)
        out[f"{column}_ci_low"], out[f"{column}_ci_high"] = found.low, found.high
    return out


def benchmark_metrics(pack: str | os.PathLike[str] | PackReader, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """A pack's MLflow metrics under its benchmark's names. A LoCoMo pack's stay as they are.
    Another benchmark's (LongMemEval) drop every LoCoMo- or J-named one (`_LEXICAL_OR_J_NAMED`) and
    take, per judge, its figure under `Benchmark.figure_key` (`longmemeval_accuracy/<judge id>`:
    overall; `_task_avg`, `_<subset>` such as `_abstention`, `_<type>` per question type, `_sd`
    and `_pass<n>` over the passes) from the judge's own block of autorater_metrics.json (the
    numbers print_qa_metrics.py gives), `judge_passes` and `judge_agreement`; and each lexical
    score as the diagnostic it is: `diagnostic_stemmed_token_f1` (LoCoMo F1's single-hop rule,
    `memorybench.score.rows.PLAIN_RULE`), `diagnostic_exact_match`, `diagnostic_token_f1`, each
    with `_task_avg` and `_<type>`, from metrics.json."""
    from memorybench.score.rows import diagnostic_name

    reader = pack if isinstance(pack, PackReader) else PackReader.open(pack)
    bench = benchmark_of_pack(reader.meta())
    if bench.own_lexical_rules:
        return dict(metrics)
    out = {k: v for k, v in metrics.items() if not _LEXICAL_OR_J_NAMED.match(k)}
    local = reader.json(layout.METRICS)
    blocks = scores_of(local)
    for metric in local.get("labels") or {}:
        scores, name = blocks.get(metric) or {}, f"diagnostic_{diagnostic_name(metric)}"
        out[name] = (scores.get("overall") or {}).get("value")
        out[f"{name}_task_avg"] = (scores.get("task_average") or {}).get("value")
        by_kind = scores.get("by_kind") or {}
        out.update({f"{name}_{kind}": (by_kind.get(str(k)) or {}).get("value") for k, kind in bench.category_names.items()})
    for judge_id in reader.judges():
        judge = reader.autorater_metrics(judge_id)
        figures = bench.judge_values(judge, passes=True) if judge is not None else {}
        if not any(value is not None for value in figures.values()):
            continue
        figures.update({"judge_passes": judge.passes, "judge_agreement": judge.j.agreement.share})  # type: ignore[union-attr]
        out.update({judge_key(name, judge_id): value for name, value in figures.items()})
    return out
