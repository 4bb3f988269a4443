"""LoCoMo's pinned files: its data file (`LOCOMO10`, the dataset locomo10's pin) and its question
prompts (`reader.prompt=locomo`), fetched with every pin; the outside audit dial481/locomo-audit (its known gold errors, `gold_audit.py`; its deliberately wrong answers,
`judge_sets.py` and the memos_eval importer), fetched with every pin, and other projects' released
per-question results (`importers/`), fetched with `memorybench fetch --peers`.
"""

from __future__ import annotations

from memorybench.data.pins import Pin

#: locomo10.json at the commit its package reproduces (the dataset `locomo10`)
LOCOMO10 = Pin(
    relpath="data/locomo10.json",
    sha256="79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4",
    repository="snap-research/locomo",
    commit="3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376",
    source_path="data/locomo10.json",
    licence="CC BY-NC 4.0",
)

# LoCoMo's own question prompts (`reader.prompt=locomo`, `reader.py`): string literals of its
# task_eval/gpt_utils.py at the data commit, each taken out of the source at fetch time


def _locomo_prompt(relpath: str, sha256: str, literal: str) -> Pin:
    """One of LoCoMo's question prompts: the string `literal` of task_eval/gpt_utils.py at the data commit."""
    return Pin(
        relpath=relpath,
        sha256=sha256,
        repository=LOCOMO10.repository,
        commit=LOCOMO10.commit,
        source_path="task_eval/gpt_utils.py",
        licence=LOCOMO10.licence,
        literal=literal,
    )


CONV_START_PROMPT = _locomo_prompt(
    "prompts/locomo_conv_start_prompt.txt",
    "68e12aada9c2b0308cf3c92cc50565391d9a408f953413565a573bb15ff0a4d8",
    "CONV_START_PROMPT",
)
QA_PROMPT = _locomo_prompt(
    "prompts/locomo_qa_prompt.txt", "a30fe18a6c9b58c5d22b6188860e5a99cdfef33fcc8a36141b571d954b9b0266", "QA_PROMPT"
)
QA_PROMPT_CAT_5 = _locomo_prompt(
    "prompts/locomo_qa_prompt_cat5.txt", "57005b715f4c2a7c848ab0d7829037afd08d5bb68ba626e4f5a83e8493104986", "QA_PROMPT_CAT_5"
)
PROMPT_PINS = (CONV_START_PROMPT, QA_PROMPT, QA_PROMPT_CAT_5)

# dial481/locomo-audit, an outside audit of the locomo10.json above (same sha256): its known
# gold errors (the overlay of memorybench.benchmarks.locomo.gold_audit) and its judged wrong-answer sets
_AUDIT_COMMIT = "9493fb4b4af4256ed17a18e8fd0b3cfdeec29539"


def _audit(relpath: str, sha256: str, source_path: str) -> Pin:
    """A file of dial481/locomo-audit at the pinned commit."""
    return Pin(
        relpath=relpath,
        sha256=sha256,
        repository="dial481/locomo-audit",
        commit=_AUDIT_COMMIT,
        source_path=source_path,
        licence="CC BY-NC 4.0",
    )


AUDIT_ERRORS = _audit(
    "locomo-audit/errors.json", "f298ef46263fada20688a1d672be37d4f488c6da3b19343eea55ae5c1b5fe55e", "errors.json"
)
AUDIT_SPECIFIC_SCORED = _audit(
    "locomo-audit/ap_v1_specific_wrong_scored.json",
    "a83882eda3ff02fd04dace6edddd0ceed533a245fedb3069ffde02a9503c4e3a",
    "ap-baseline/v1/ap_eval_results_scored.json",
)
AUDIT_VAGUE_SCORED = _audit(
    "locomo-audit/ap_v2_vague_wrong_scored.json",
    "3c32acbdcf667967a4e1f9f541b06566ae5e7361dc92f79f9043af7d068adc6b",
    "ap-baseline/v2/ap_eval_results_scored.json",
)
# the audit's deliberately wrong answers to the 1,540 questions of categories 1-4 (unjudged), the
# sets `memorybench judge-check` calibrates a judge with (`judge_sets.py`)
AUDIT_SPECIFIC_WRONG = _audit(
    "locomo-audit/ap_v1_specific_wrong.json",
    "080338f63c229d36b2a177cf4c0720a47aedff830f8202c908c40412d76f5feb",
    "ap-baseline/v1/ap_eval_results.json",
)
AUDIT_VAGUE_WRONG = _audit(
    "locomo-audit/ap_v2_vague_wrong.json",
    "3118fcc86f683d32e0b7294f65345ff8d612e74bd8d5da9af82627d12b82810a",
    "ap-baseline/v2/ap_eval_results.json",
)
AUDIT_PINS = (AUDIT_ERRORS, AUDIT_SPECIFIC_SCORED, AUDIT_VAGUE_SCORED, AUDIT_SPECIFIC_WRONG, AUDIT_VAGUE_WRONG)
#: the record's `pins`: fetched and verified by every `memorybench fetch`
PINS = (*PROMPT_PINS, *AUDIT_PINS)


#: other projects' released per-question LoCoMo results (docs/reproducing.md imports them):
#: the record's `peer_pins`: fetched only on request (`memorybench fetch --peers`), pinned like the data
_ZEP = ("getzep/zep-papers", "4b7f26cc76cca20743314ba9acb8c2cb6adc42f6", "kg_architecture_agent_memory/locomo_eval/data")
_HONCHO = ("snap-research/LoCoMo", "48aa2206a62ef0f1f98271d5358af666ca234379", "results/honcho")  # pull request 7's head
PEER_PINS: tuple[Pin, ...] = (
    Pin(
        relpath="peers/memobase_eval_0710_3000.json",
        sha256="171489e7a60dd6275027a9897270ad5a9bce83193c2b64863ecd43eba9582b5a",
        repository="memodb-io/memobase",
        commit="358c16bbc6d687937d79bc2f984a11c3be8da901",
        source_path="docs/experiments/locomo-benchmark/fixture/memobase/memobase_eval_0710_3000.json",
        licence="Apache-2.0",
    ),
    Pin(
        relpath="peers/zep_locomo_grades.json",
        sha256="2ecb701017bb007306e88abd1af88a9cddac06098e6a7f666e4640aadce23fc6",
        repository=_ZEP[0],
        commit=_ZEP[1],
        source_path=f"{_ZEP[2]}/zep_locomo_grades.json",
        licence="see repository",
    ),
    Pin(
        relpath="peers/zep_locomo_responses.json",
        sha256="c4943a6e15013e8af07a079d285a0d8206282ff6815429db2f5f5d5d5ad28b6d",
        repository=_ZEP[0],
        commit=_ZEP[1],
        source_path=f"{_ZEP[2]}/zep_locomo_responses.json",
        licence="see repository",
    ),
    Pin(
        relpath="peers/locomo10_qa_honcho_base.json",
        sha256="303e62b7870e38ee86b9fe66ace33ace531a06282ca2ca45038e21436b868fc0",
        repository=_HONCHO[0],
        commit=_HONCHO[1],
        source_path=f"{_HONCHO[2]}/locomo10_qa_honcho_base.json",
        licence="CC BY-NC 4.0",
    ),
    # the released name has a space ("locomo10_qa_stats honcho_base.json"): stored with `_`
    Pin(
        relpath="peers/locomo10_qa_stats_honcho_base.json",
        sha256="ba9a632ad63771d1068250549a5ee7ab4e4d2a96201feec71a5c2556e44d99b3",
        repository=_HONCHO[0],
        commit=_HONCHO[1],
        source_path=f"{_HONCHO[2]}/locomo10_qa_stats%20honcho_base.json",
        licence="CC BY-NC 4.0",
    ),
)
