"""BEAM (Tavakoli et al., ICLR 2026, "Beyond a Million Tokens"): long conversations between a
user and an assistant, probed by 20 questions each, two per ability over ten abilities.

The 128K tier (`chats/100K` of mohammadtavakoli78/BEAM, pinned: 20 conversations, 400 questions,
5,732 turns) is read by `data.py`: a conversation is its batches of turns, each dated by its time
anchor; a question is its text, its ability (the category) and, scorer-side only, its difficulty,
reference answer, rubric and ability-specific fields. The authors' judge asks, per rubric item,
for 1.0 / 0.5 / 0.0 (`prompts.py`: their prompt bytes, parsed from the pinned src/prompts.py and
filled as the pinned compute_metrics.py fills them); `score.py` computes two profiles from one
judge pass: `beam_official` (the pinned code's arithmetic: 0.5 truncated to 0, event ordering by
`tau_norm`) and `beam_paper` (0.5 kept). docs/beam.md says what differs between published numbers.

A tier is a dataset that is a folder (`Dataset.folder`): `beam_128k`'s pin is `pins.TIER_128K`,
its 40 files fetched and verified as a whole by every `memorybench fetch`, its sha256 that of
their `sha256sum` manifest; `dataset.path` names a local copy of a tier folder, hashed the same
way. The 500K, 1M and 10M tiers have no pin (their files' sha256 are published nowhere we can
check, and our machines cannot fetch them): `dataset=beam_500k|beam_1m|beam_10m` reads a local
copy only, and without `dataset.path` is refused in one line saying so. Its judge (`judge.py`,
`judge=beam_official` or `judge=beam`) makes several traced calls per question; `figures.py`
gives both profiles from the stored calls.
"""

from __future__ import annotations

from memorybench.benchmark import Benchmark, Dataset, OwnTable

#: the repository and commit of the pinned tier, where the other tiers lie too (`pins.py`)
_REPOSITORY = "mohammadtavakoli78/BEAM at commit b2a3ee8b"


def _unpinned(name: str, tier: str, hub: str) -> Dataset:
    """A tier without a pin: a local copy of its folder only (`dataset.path`)."""
    return Dataset(
        name,
        pin=None,
        folder=True,
        max_bytes=4 << 30,
        expected=f"a local copy of BEAM's tier folder chats/{tier} (keeping its name {tier})",
        source=f"{_REPOSITORY} (chats/{tier}) and the Hugging Face dataset {hub}",
    )


BENCHMARK = Benchmark(
    name="beam",
    title="BEAM",
    version="mohammadtavakoli78/BEAM@b2a3ee8ba12d",
    datasets=(
        Dataset(
            "beam_128k",
            pin="memorybench.benchmarks.beam.pins:TIER_128K",
            folder=True,
            max_bytes=512 << 20,
            expected="BEAM's tier folder chats/100K (its numbered conversation folders)",
        ),
        _unpinned("beam_500k", "500K", "Mohammadta/BEAM"),
        _unpinned("beam_1m", "1M", "Mohammadta/BEAM"),
        _unpinned("beam_10m", "10M", "Mohammadta/BEAM-10M"),
    ),
    # the 20 questions of a conversation share its memory: intervals resample conversations
    unit="conversation",
    # the ten abilities as the authors' files and report_results.py's columns name them
    category_names={
        1: "abstention",
        2: "contradiction_resolution",
        3: "event_ordering",
        4: "information_extraction",
        5: "instruction_following",
        6: "knowledge_update",
        7: "multi_session_reasoning",
        8: "preference_following",
        9: "summarization",
        10: "temporal_reasoning",
    },
    loader="memorybench.benchmarks.beam.data:load_beam",
    scored_by=(
        "the authors' rubric judge (src/prompts.py unified_llm_judge_base_prompt, gpt-4.1-mini): 1 / 0.5 / 0 per "
        "rubric item; event ordering by Kendall tau-b of the LLM-aligned answer lines (compute_metrics.py), "
        "averaged per ability over conversations (report_results.py)"
    ),
    judge="beam",
    blocks=("figures",),
    judge_figures="memorybench.benchmarks.beam.figures",
    # the authors' answer prompt (reader.prompt=beam_rag, `reader.py`; experiment=beam_authors sets their settings)
    reader_prompts=("beam_rag",),
    reader_templates="memorybench.benchmarks.beam.reader:READERS",
    report_tables={
        "beam_profiles": OwnTable(
            "memorybench.benchmarks.beam.figures:profiles_table",
            "BEAM's two profiles side by side, per condition and judge (every judge's one pass gives both): per ability "
            "`beam_official` (the pinned compute_metrics.py's arithmetic: every 0.5 rubric verdict truncated to 0; event "
            "ordering by tau_norm) and `beam_paper` (0.5 kept), each with its {conf:.0%} interval over conversations "
            "(cluster-robust t), and `difference` (paper minus official, paired by question, with its interval); `n` "
            "questions over `conversations`; the overall is the plain mean of the ten abilities (report_results.py "
            "writes none), given only when every ability has questions. A question's figure is its first pass's, "
            "averaged over the condition's packs. Beside every figure, what its judge accepts of `memorybench judge-check "
            "dataset=beam_128k`'s sets (`judge_accepts_<set>`: vague_wrong, specific_wrong, one_side, gold, each the share "
            "whose figure is 0.5 or more; empty where the judge was never checked) and `judge_calibration`, its summary.",
        )
    },
    judge_protocols={
        "beam": "memorybench.benchmarks.beam.judge:BeamJudge",
        "beam_official": "memorybench.benchmarks.beam.judge:BeamOfficialJudge",
    },
    judge_figure="score (BEAM's rubric judge)",
    figure_key="beam_score",
    kind_word="ability",
    pins="memorybench.benchmarks.beam.pins:PINS",
    question_columns="memorybench.benchmarks.beam.data:question_columns",
    # `memorybench judge-check dataset=beam_128k`: wrong and right answers made from the pinned tier
    judge_sets="memorybench.benchmarks.beam.judge_sets",
    # others' BEAM results: Cognee's runs on the 128K tier, AMB's output files (`importer.py`)
    released_formats=("cognee_beam", "amb_beam"),
    # Cognee's four pinned runs on the 128K tier, its summary and its scoring code: `fetch --peers`
    peer_pins="memorybench.benchmarks.beam.pins:COGNEE_PINS",
    importer="memorybench.benchmarks.beam.importer",
    judge_hint=(
        "score (BEAM's rubric judge, both profiles, beam_official and beam_paper, from one pass): memorybench "
        "autorater {pack} judge=beam_official  (the pinned compute_metrics.py's requests; judge=beam: ours, the "
        "question filled in; gpt-4.1-mini, needs OPENAI_API_KEY; offline: judge=local judge.protocol=beam, the "
        "embedded model, not comparable; docs/beam.md)"
    ),
    notes=(
        "the tier folder chats/100K is the paper's 128K tier",
        "beam_official truncates every 0.5 rubric verdict to 0 (compute_metrics.py int(score)); beam_paper keeps it",
    ),
)
