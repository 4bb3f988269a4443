"""LoCoMo (Maharana et al., ACL 2024): `locomo10.json`, ten conversations, 1,986 questions.

Its questions share ten conversations, so the unit of resampling is the conversation; its
own score is its released category F1 (`memorybench.score.locomo`); Mem0's LLM judge (J)
scores categories 1-4. Its loader, scorer, reader protocol, importers of released files,
gold-error overlay and judge calibration sets live in the modules each names; this record
is what the rest of memorybench asks.
"""

from __future__ import annotations

from memorybench.benchmark import Benchmark, Dataset

BENCHMARK = Benchmark(
    name="locomo",
    title="LoCoMo",
    datasets=(Dataset("locomo10", pin="memorybench.data.pins:LOCOMO10", expected="locomo10.json"),),
    unit="conversation",
    # LoCoMo's category numbers as its own scorer names them. Mem0's paper uses other names
    # for the same numbers, so tables print the number beside the name.
    category_names={1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"},
    loader="memorybench.benchmarks.locomo.data:load_locomo",
    scored_by="LoCoMo's category F1; Mem0's LLM judge (J) over categories 1-4",
    own_lexical_rules=True,
    lexical_rules={c: c for c in (1, 2, 3, 4, 5)},
    judged=(1, 2, 3, 4),
    judge="mem0",
    judge_hint=(
        "J (Mem0's LLM judge, categories 1-4): memorybench autorater {pack}  (judge=mem0, gpt-4o-mini, needs "
        "OPENAI_API_KEY; judge=local for the embedded model, not comparable)"
    ),
)
