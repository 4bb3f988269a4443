"""Figures about one pack that MLflow logs beside its run summary, each computed where the
comparison layer computes it: the interval of each overall over the pack's conversations
(`memorybench.compare.intervals`, as `compare` and `report` give it) and what each of its
judges accepts (`memorybench judge-check`'s calibration)."""

from __future__ import annotations

import os

from memorybench.compare.summary import judge_key
from memorybench.pack import layout
from memorybench.pack.reader import PackReader

__all__ = ["calibration_metrics", "interval_metrics"]


def calibration_metrics(judge_id: str, pack: str | os.PathLike[str] | PackReader) -> dict[str, float | None]:
    """What a judge accepts, beside its J (`memorybench judge-check`, kept in the run's
    `paths.cache`): `judge_vague_wrong_accepted/<judge id>`, `judge_specific_wrong_accepted/...`,
    `judge_gold_accepted/...`; nothing for a judge never calibrated. Metrics, not params:
    a judge calibrated after its pack was logged updates them."""
    import yaml

    from memorybench.pack.judge_calibration import cache_dir_of, find_calibration

    reader = pack if isinstance(pack, PackReader) else PackReader.open(pack)
    cache = cache_dir_of(yaml.safe_load(reader.read_text(layout.CONFIG)) if reader.exists(layout.CONFIG) else None)
    found = find_calibration(judge_id, [cache] if cache else [])
    if found is None:
        return {}
    return {judge_key("judge_vague_wrong_accepted", judge_id): found.vague_wrong_accepted,
            judge_key("judge_specific_wrong_accepted", judge_id): found.specific_wrong_accepted,
            judge_key("judge_gold_accepted", judge_id): found.gold_accepted}


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
    rows = [(int(r["category"]), r["sample_id"], float(r["locomo_f1"])) for r in table if r.get("locomo_f1") not in (None, "")]
    held = {c for c, _, _ in rows}
    out: dict[str, float | None] = {"conversations": float(len({s for _, s, _ in rows}))}
    for name, categories in (("locomo_f1_1_4", {1, 2, 3, 4}), ("locomo_f1_1_5", {1, 2, 3, 4, 5})):
        if not categories <= held:
            continue
        found = mean_interval([f for c, _, f in rows if c in categories], [s for c, s, _ in rows if c in categories])
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = found.low, found.high
    return out
