"""LongMemEval's pinned files: its evaluation code (parsed, never imported) and its data files.

The code files are fetched with every pin (`memorybench fetch`: the record's `pins`); the data
files are large (`memorybench.data.large_pins.LargePin`), fetched on request with
`memorybench fetch --dataset NAME`, each named by its dataset's `pin`.
"""

from __future__ import annotations

from memorybench.data.large_pins import LargePin
from memorybench.data.pins import Pin

# LongMemEval's evaluation code (xiaowu0162/LongMemEval, MIT), whole files at one commit: the
# judge's per-type prompts and label rule, the QA and retrieval metrics, the reader prompts.
# this package's score, judge and reader modules read them (parsed, never imported)
_COMMIT = "9e0b455f4ef0e2ab8f2e582289761153549043fc"


def _longmemeval(name: str, sha256: str, source_path: str) -> Pin:
    """A file of xiaowu0162/LongMemEval at the pinned commit, stored as longmemeval/<name>."""
    return Pin(
        relpath=f"longmemeval/{name}",
        sha256=sha256,
        repository="xiaowu0162/LongMemEval",
        commit=_COMMIT,
        source_path=source_path,
        licence="MIT",
    )


EVALUATE_QA = _longmemeval(
    "evaluate_qa.py", "ecce9c4c79dc89d99534ac17b383a5cbb5b9f0c69ee98adaf0684742e3d95251", "src/evaluation/evaluate_qa.py"
)
PRINT_QA_METRICS = _longmemeval(
    "print_qa_metrics.py",
    "e9283933a0cefb7a0ded7365e436ae3d1be5aac41853325e6155d83bf07607f0",
    "src/evaluation/print_qa_metrics.py",
)
EVAL_UTILS = _longmemeval(
    "eval_utils.py", "c98b8d1096877a15aa755c9de44fe33c195298466a2eb6f3c0f9f6bde8c72349", "src/retrieval/eval_utils.py"
)
RUN_GENERATION = _longmemeval(
    "run_generation.py", "4f1eb3c69d7ad40f04065b9c0bc86f6582441018fc6ff751d162d66c95baf672", "src/generation/run_generation.py"
)
RUN_RETRIEVAL = _longmemeval(
    "run_retrieval.py", "efd7fc5969a904717741fadca3c7dc73611ddbb2aaf3ef33117ebb6943b3e346", "src/retrieval/run_retrieval.py"
)
PRINT_RETRIEVAL_METRICS = _longmemeval(
    "print_retrieval_metrics.py",
    "58b70c0b562ea57372a7774a554c347cd908e901b77ac0149fc90b097b6f1b8f",
    "src/evaluation/print_retrieval_metrics.py",
)
LICENSE = _longmemeval("LICENSE", "d3c4b9aa54759df6ded337978a6f3b55b75615e5e4525c3b82d7e2627d4b9732", "LICENSE")
CODE_PINS = (
    EVALUATE_QA,
    PRINT_QA_METRICS,
    EVAL_UTILS,
    RUN_GENERATION,
    RUN_RETRIEVAL,
    PRINT_RETRIEVAL_METRICS,
    LICENSE,
)


#: the data files, by dataset name (xiaowu0162/longmemeval-cleaned on Hugging Face, pinned by revision)
_CLEANED = ("xiaowu0162/longmemeval-cleaned", "98d7416c24c778c2fee6e6f3006e7a073259d48f")
DATA: dict[str, LargePin] = {
    "longmemeval_oracle": LargePin(
        "longmemeval/longmemeval_oracle.json",
        *_CLEANED,
        "longmemeval_oracle.json",
        15_388_478,
        "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c",
        "MIT",
    ),
    "longmemeval_s": LargePin(
        "longmemeval/longmemeval_s_cleaned.json",
        *_CLEANED,
        "longmemeval_s_cleaned.json",
        277_383_467,
        "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442",
        "MIT",
    ),
    "longmemeval_m": LargePin(
        "longmemeval/longmemeval_m_cleaned.json",
        *_CLEANED,
        "longmemeval_m_cleaned.json",
        2_737_100_077,
        "9d79e5524794a2e6900a3aa9cb7d9152c5a3e8319c9a87c25494ba1eacee495f",
        "MIT",
    ),
}
