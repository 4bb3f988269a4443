"""LoCoMo-Plus (Li et al., ACL 2026): LoCoMo's five categories plus a sixth, "Cognitive".

401 cue/trigger items (`data/locomo_plus.json` of xjtuleeyf/Locomo-Plus, pinned) are
stitched into LoCoMo's conversations (`stitch.py`, seeded where the authors' pick is not);
each asks whether an answer to a later trigger connects to the earlier cue. Every question,
LoCoMo's 1,986 and the 401, is judged by the authors' per-category templates (`judge.py`:
`prompt.py` pinned, correct / partial / wrong = 1 / 0.5 / 0); the figure is their mean per
category and overall (`llm_as_judge.py`'s summary). LoCoMo F1 of categories 1-5 and a
stemmed token F1 of category 6 against the cue stand beside it as diagnostics.

This package is the whole benchmark: the record below, its pins, its loader, its stitching
and its judge; `conf/dataset/locomo_plus.yaml` and `conf/judge/locomo_plus.yaml` select it.
"""

from __future__ import annotations

from memorybench.benchmark import Benchmark, Dataset

BENCHMARK = Benchmark(
    name="locomo_plus",
    title="LoCoMo-Plus",
    version="xjtuleeyf/Locomo-Plus@059f4e3d38f7; snap-research/locomo@3eb6f2c585f5",
    datasets=(
        Dataset("locomo_plus", pin="memorybench.benchmarks.locomo_plus.pins:DATA", expected="locomo_plus.json"),
        # the sixth category alone: the 401 stitched items, without LoCoMo's 1,986 questions
        Dataset(
            "locomo_plus_cognitive",
            pin="memorybench.benchmarks.locomo_plus.pins:DATA",
            expected="locomo_plus.json",
            loader="memorybench.benchmarks.locomo_plus.data:load_cognitive",
        ),
    ),
    # a stitched conversation is a conversation of its own: LoCoMo's questions cluster in their
    # ten, each cue/trigger item is its own sample
    unit="conversation",
    # the authors' category names (unified_input.py: LoCoMo's 3 is "common-sense" there)
    category_names={1: "multi-hop", 2: "temporal", 3: "common-sense", 4: "single-hop", 5: "adversarial", 6: "Cognitive"},
    loader="memorybench.benchmarks.locomo_plus.data:load_locomo_plus",
    scored_by="the authors' per-category judge templates (prompt.py): correct 1, partial 0.5, wrong 0",
    # LoCoMo's own category rules for 1-5; the cue, as the judge reads it, by the single-hop rule for 6
    lexical_rules={1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 4},
    judge="locomo_plus",
    judge_figure="score (LoCoMo-Plus's judge)",
    figure_key="locomo_plus_score",
    pins="memorybench.benchmarks.locomo_plus.pins:PINS",
    sample_note="memorybench.benchmarks.locomo_plus.data:stitch_note",
    judge_protocols={"locomo_plus": "memorybench.benchmarks.locomo_plus.judge:LocomoPlusJudge"},
    judge_hint=(
        "score (LoCoMo-Plus's judge, the authors' per-category templates): memorybench autorater {pack} "
        "judge=locomo_plus  (gpt-4o-mini, needs OPENAI_API_KEY; offline: judge=local judge.protocol=locomo_plus, "
        "the embedded model, not comparable; docs/locomo_plus.md)"
    ),
)
