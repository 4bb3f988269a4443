"""LoCoMo (Maharana et al., ACL 2024): `locomo10.json`, ten conversations, 1,986 questions.

Its questions share ten conversations, so the unit of resampling is the conversation; its
own score is its released category F1 (`score.py`, registered by `scorers.py`); Mem0's LLM judge (J)
scores categories 1-4. Its loader, scorer, reader protocol, importers of released files,
gold-error overlay and judge calibration sets live in the modules each names; this record
is what the rest of memorybench asks.
"""

from __future__ import annotations

from memorybench.benchmark import Benchmark, Dataset, Subset

BENCHMARK = Benchmark(
    name="locomo",
    title="LoCoMo",
    # the data file and task_eval/evaluation.py of snap-research/locomo at the pinned commit
    version="snap-research/locomo@3eb6f2c585f5",
    # Mem0's basis (its judge skips category 5) and LoCoMo's own, only where category 5 was asked
    subsets={"1-4": Subset((1, 2, 3, 4)), "1-5": Subset((1, 2, 3, 4, 5), asked=(5,), label="overall 1-5 (LoCoMo)")},
    datasets=(
        Dataset("locomo10", pin="memorybench.benchmarks.locomo.pins:LOCOMO10", expected="locomo10.json", fits_local_reader=True),
    ),
    unit="conversation",
    # LoCoMo's category numbers as its own scorer names them. Mem0's paper uses other names
    # for the same numbers, so tables print the number beside the name.
    category_names={1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"},
    loader="memorybench.benchmarks.locomo.data:load_locomo",
    # its category F1 (every benchmark's lexical score), and our exact match and token F1 on its normalisation
    scorers="memorybench.benchmarks.locomo.scorers:SCORERS",
    scored_by="LoCoMo's category F1; Mem0's LLM judge (J) over categories 1-4",
    own_lexical_rules=True,
    lexical_rules={c: c for c in (1, 2, 3, 4, 5)},
    judged=(1, 2, 3, 4),
    judge="mem0",
    # its own question protocol (category 5 as a two-way choice, category 2's date suffix): `reader.py`
    reader_prompts=("locomo",),
    protocol_note=(
        "reader.prompt=locomo poses category 2 with LoCoMo's date suffix and category 5 as a two-way choice; "
        "an open-ended prompt does not. Their category 2, 5 and 1-5 figures do not measure the same thing."
    ),
    reader_templates="memorybench.benchmarks.locomo.reader:READERS",
    gold_audit="memorybench.benchmarks.locomo.gold_audit",
    # its question prompts and the audit's files, fetched with every pin; others' released results, with `fetch --peers`
    pins="memorybench.benchmarks.locomo.pins:PINS",
    peer_pins="memorybench.benchmarks.locomo.pins:PEER_PINS",
    judge_sets="memorybench.benchmarks.locomo.judge_sets",
    judge_hint=(
        "J (Mem0's LLM judge, categories 1-4): memorybench autorater {pack}  (judge=mem0, gpt-4o-mini, needs "
        "OPENAI_API_KEY; judge=local for the embedded model, not comparable)"
    ),
    # others' released LoCoMo results (`memorybench import --format F`): importers/, one module a format
    released_formats=("mem0_evals", "mem0_search", "locomo_task_eval", "zep", "core", "memos_eval", "amb_locomo"),
    importer="memorybench.benchmarks.locomo.importers",
)
