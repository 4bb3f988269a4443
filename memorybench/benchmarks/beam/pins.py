"""BEAM's pinned files (mohammadtavakoli78/BEAM at one commit): the 128K tier's conversations and
probing questions, and the authors' scoring and answering code that memorybench reads (parsed,
never imported). `memorybench fetch` downloads and verifies every one with the other pins.

The 128K tier is a folder, `chats/100K/` (the authors' folder name for it): conversation N is
`N/chat.json` and `N/probing_questions/probing_questions.json`, N = 1..20. Each file is a `Pin`
of its own; `TIER_128K` is the folder as one record (`PinnedTier`): its members, and one sha256
over them (`manifest`) that run_meta.json records as the dataset's, as a file's sha256 is for
a one-file dataset. The other tiers (500K, 1M, 10M) have no pin: their datasets read a local
copy only (`beam/__init__.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memorybench.data.folders import FolderPin
from memorybench.data.pins import Pin

__all__ = [
    "ANSWER_GENERATION",
    "CHATS_128K",
    "CODE_PINS",
    "COGNEE_CODE",
    "COGNEE_CONFIG",
    "COGNEE_PINS",
    "COGNEE_RUNS",
    "COGNEE_SUMMARY",
    "COMPUTE_METRICS",
    "LLM",
    "LONG_TERM_MEMORY_METHODS",
    "PINS",
    "PROMPTS",
    "PinnedTier",
    "QUESTIONS_128K",
    "REPORT_RESULTS",
    "RUN_EVALUATION",
    "TIER_128K",
    "TIER_128K_FOLDER",
    "TIER_128K_PINS",
]

REPOSITORY = "mohammadtavakoli78/BEAM"
COMMIT = "b2a3ee8ba12d68f83143dda191097dc3e028ddd3"
# the repository has no LICENSE file; PINS.md records the Hugging Face card's licence
LICENCE = "no LICENSE file in the repository; the Hugging Face card (Mohammadta/BEAM) cites CC BY-SA 4.0"
#: where the chat files of a tier sit inside a conversation's folder (answer_generation.py's paths)
CHAT_FILE = "chat.json"
QUESTIONS_FILE = "probing_questions/probing_questions.json"


def _beam(source_path: str, sha256: str) -> Pin:
    """A file of the BEAM repository at the pinned commit, stored as beam/<its path>."""
    return Pin(
        relpath=f"beam/{source_path}",
        sha256=sha256,
        repository=REPOSITORY,
        commit=COMMIT,
        source_path=source_path,
        licence=LICENCE,
    )


# conversation N -> (chat.json, probing_questions.json) sha256, from ../shared/pins/beam/SHA256SUMS
_TIER_128K_SHA256 = {
    1: (
        "ea71efd5dcc13f7366d3737b45d532eadb3d1497f3d6f23d1fa1c4004d5ffdf2",
        "047398ff1497674b11585e7b4829c3d64d2d5e63f7f3572c826b73ca1faaf898",
    ),
    2: (
        "3a3bd796f4aa24e8f34e718dc2823ae942663349eb89054f03885051e2daf1c4",
        "d188e929644c9ef9fcd4520e7b5a3daf2c2e069b1247a324bd13d5aadd1ed96e",
    ),
    3: (
        "432d3ae5493c04a17a5b6b0ef7c012a70e70ac5cfcaef13059fca6bedb903009",
        "f53030f3753b0e0a93b330bc62d597cb66375c0c794094d7e69b7646df46e324",
    ),
    4: (
        "e0ef0f74b1f7ac911e8e0518722335c422cbc1112048e9909911b208c51fc027",
        "f69eda522cd7325830c8f78b6f02a571c992b6cf43311fa96f28043fd3c18dae",
    ),
    5: (
        "13ac88e483e0d63d3830479fe17f961af1b414503b5077914865eca1c48a1ce8",
        "bdd0819a911e46951dbf998905b8eba96a0cdb103cd3dda79ae9c6831e5f195d",
    ),
    6: (
        "5365cdc41da212fb7143cf9f191ff7862eed8e9ca175b3728fe593adedc87871",
        "7a6f88dfdeb3f1b582209a745e7c980158dbb2829a9ceae6cdb08bb868a00035",
    ),
    7: (
        "525271b1d24179dbc2deb664c69db0bbaead5938630a0b0d5cd2881b8b79224d",
        "2c00219e839d54c7cd3e4fbb396f8a2517fd9f143d3a3b8ea1c4fb9f5c4435c7",
    ),
    8: (
        "3207b8f5aa45cd1b2d1e2f37f224831b4696d0cc2352ef514af08f2092b6c239",
        "d279dbd8fd293692d29f0057b3dd2468ccb97c7da6df28ae2adc8481d9970148",
    ),
    9: (
        "446777f3eed114c27d62030ad86cfb8ad6610fda0fc83dfe98403b8d68b74bd4",
        "b7ab1c7022c0b7ac6928f4c2efadd08e2a438dc91e1288209df066cdcd5e9573",
    ),
    10: (
        "de18b7b0ad73491f338296b64ae30f16b94d77404420d971d3f6b513d190ad1c",
        "e9bf9bb545b350425a770ef65b501434ba9983c7535b4524dd6ae4d5743b5a95",
    ),
    11: (
        "45cb4fab51042278e6a57f524fca4cd4b8941cbbd091f9ec8fb92dad4de31b12",
        "3aa98a74a03be59472834422dd14004d3b432a0c800bbef8f316865834449c08",
    ),
    12: (
        "2654160ebfcbd8a9f7d47a0340503cb301b0f54cb472f93578fa20e78c84c430",
        "c36c9b1d4df0d063d1c7db81b35b5ea4743e38a804382d6e557f37ec46e1d6e3",
    ),
    13: (
        "aea586c143dab53cb5a021b3fab23380d5d9628fea1c4b718f91411019166dc6",
        "02dee0ba1d5576aed8ac535328a23fe4f882f6dcff3b96e039162e10d547236b",
    ),
    14: (
        "43fbffd9ca235a980203faf4c5d6f636e97af4f31f6d91d9cbe42035ab4f0b0d",
        "f30350303b4ccd52a36deaf57750a2bf6924fa5885da92d8230797a82dcfbe5f",
    ),
    15: (
        "e758dfbdfe6d5a6bd060c6577e6f0282eb445fd7f93150208dcd56e8f8676f43",
        "6d6ed59bd8cad87ce279c08f42137c2199502d09f198cfa880ef3ab04debd891",
    ),
    16: (
        "414f11e16156d490cfb8449db62bddae88308e5b37fa79df54b147637f059afd",
        "abf20d16a37322112af0fe48f5c43be0d824d54ae2bb2c5e3e069c6e84c54033",
    ),
    17: (
        "6eb309c34fd98025327bbe46dec8cdfbf76304c249d3f579f02f46cea06eeefe",
        "7948981c2e40751bfe9ace82e53497d32229245e6012a2e5d4da2e801c929451",
    ),
    18: (
        "3c08576a5726fa48b9f906bc8699fab37e33cc5219f076f76374f7c1302449cb",
        "d813db9e2b416e6ac7cc22841b131ea5c80e5931e690f81bb37aa16c3b9edc3a",
    ),
    19: (
        "4c6dd78fa5aa6bd645eab8a3f041eac290c87564fd822582477c8e446979850f",
        "b911651b2b18e835aaac58b2bc3cb018bc782e252b9161dca8174961ca498ce2",
    ),
    20: (
        "af49a279c8ca5eef5829f8155bca89b41b05fb33fef438dce0a6cac8d99a7802",
        "46b679bffff904fd71ed247f5172e9a4a30ed7eb2fdaacc1d89aac0932e5f043",
    ),
}
#: the 128K tier's folder in the repository (the authors call the tier 100K in their paths)
TIER_128K_FOLDER = "chats/100K"
CHATS_128K: tuple[Pin, ...] = tuple(
    _beam(f"{TIER_128K_FOLDER}/{n}/{CHAT_FILE}", chat) for n, (chat, _) in _TIER_128K_SHA256.items()
)
QUESTIONS_128K: tuple[Pin, ...] = tuple(
    _beam(f"{TIER_128K_FOLDER}/{n}/{QUESTIONS_FILE}", questions) for n, (_, questions) in _TIER_128K_SHA256.items()
)
#: every file of the tier, conversation by conversation (chat, then its questions)
TIER_128K_PINS: tuple[Pin, ...] = tuple(p for pair in zip(CHATS_128K, QUESTIONS_128K) for p in pair)

#: the prompts: the rubric judge's `unified_llm_judge_base_prompt`, the fact-extraction prompt
PROMPTS = _beam("src/prompts.py", "2f630cc983ab0c34cfa80b1b4d340f5b51a9b4a3baa5af8aea9503c585eda06a")
#: the official scoring: the judge's requests, `int(score)` per rubric item, event ordering's tau
COMPUTE_METRICS = _beam("src/evaluation/compute_metrics.py", "0715226375e9d24646c49c504194ba61cfb26d39415da5ebe9bdc4c6dcd3726c")
#: the official table: per ability, `tau_norm` for event ordering, averaged over conversations
REPORT_RESULTS = _beam("src/evaluation/report_results.py", "1486a44fac721717c0a9373b32f4487c277d2bf28044cf28f649a6a74e692c96")
#: which judge model scores (`gpt_llm`), where the evaluation files are written
RUN_EVALUATION = _beam("src/evaluation/run_evaluation.py", "518894ab65860043a24259457ddf3b1ab8ae18427b6e01e5aa90cd29c4256a3b")
#: the judge model itself (`gpt_llm_obj`: gpt-4.1-mini, temperature 0)
LLM = _beam("src/llm.py", "1ce32f8bf67935fc0fcf169963cce79b5f7ee4e63e25baf72b174c497d364c54")
#: the authors' answering (their reader option)
ANSWER_GENERATION = _beam(
    "src/answer_probing_questions/answer_generation.py", "b8117f64146ebfe5693b0ce6f3478fed7584bca6023c25059f2def49341a1f42"
)
#: the authors' answering methods: `probing_question_evaluation` fills their answer prompt
#: (`answer_generation_for_rag` of src/prompts.py) for every retrieval method (`reader.py`)
LONG_TERM_MEMORY_METHODS = _beam(
    "src/answer_probing_questions/long_term_memory_methods.py", "d3fd96786d2d58a4b0b60ff726ebf00d1adf84f7bb8487abfd8768f3519cffd8"
)
CODE_PINS: tuple[Pin, ...] = (
    PROMPTS,
    COMPUTE_METRICS,
    REPORT_RESULTS,
    RUN_EVALUATION,
    LLM,
    ANSWER_GENERATION,
    LONG_TERM_MEMORY_METHODS,
)


@dataclass(frozen=True)
class PinnedTier(FolderPin):
    """A tier of BEAM as one pinned dataset: a folder whose files are each pinned (the core's
    `FolderPin`: verified as a whole, its sha256 that of its members' `sha256sum` manifest, the
    number a local copy of the folder hashes to and run_meta.json records)."""

    @property
    def tier(self) -> str:
        """The tier's folder name ("100K"): what its sample ids carry."""
        return Path(self.source_path).name


TIER_128K = PinnedTier(
    relpath=f"beam/{TIER_128K_FOLDER}",
    repository=REPOSITORY,
    commit=COMMIT,
    source_path=TIER_128K_FOLDER,
    licence=LICENCE,
    members=TIER_128K_PINS,
)
#: the benchmark's own pins beside its datasets, fetched and verified by every `memorybench fetch`
#: (the tier's files come with its dataset, `TIER_128K`, verified as a whole)
PINS: tuple[Pin, ...] = CODE_PINS


# -- others' BEAM results (`importer.py`): pinned like the data, fetched by no plain `memorybench fetch` --
#: topoteretes/cognee at the commit of its BEAM report; the files under cognee/eval_framework/beam/,
#: stored as peers/cognee-beam/<the path below that folder> (../shared/pins/peers/cognee-beam/SHA256SUMS)
COGNEE_REPOSITORY = "topoteretes/cognee"
COGNEE_COMMIT = "a8f9760bb6da90a9956b3be77c0d0534134f533a"
_COGNEE_FOLDER = "cognee/eval_framework/beam"
_COGNEE_100K = "report_artifacts/100k_fixed"


def _cognee(path: str, sha256: str) -> Pin:
    return Pin(
        relpath=f"peers/cognee-beam/{path}",
        sha256=sha256,
        repository=COGNEE_REPOSITORY,
        commit=COGNEE_COMMIT,
        source_path=f"{_COGNEE_FOLDER}/{path}",
        licence="Apache-2.0",
    )


#: its four QA-and-judging rounds over conversation 2 of the 128K tier (20 questions each; `cognee_beam`)
COGNEE_RUNS: tuple[Pin, ...] = tuple(
    _cognee(f"{_COGNEE_100K}/beam_existing_ingestion_metrics_conv1_hybrid_completion_20_20_qa_v1_run{n}.json.gz", sha)
    for n, sha in enumerate(
        (
            "acca2bd93762fae912030ce1b7d2b9ed30844ef3ae71a669ab9eeae3579c97d0",
            "161f1180ccc083766aa4a4eb34d688ebbcf49cdf2ec68de62c020eebc318362f",
            "0753d43d43453bf5f1e76aa81055e991333d6566e6c93d9925af21d9e196620b",
            "1fb896ccf14e5041dbdd713a2d499886982837be73601c18ac0a44035b0baaa2",
        )
    )
)
#: the packaged retriever config and aggregate_cross_run.py's summary of the four (mean 0.7944, run sd 0.0046)
COGNEE_CONFIG = _cognee(
    f"{_COGNEE_100K}/beam_hybrid_completion_20_20_qa_v1_config.json",
    "ef196c18d03d49ed589dfbb5b92cd842a29c39530c15580f06bf4d020632562d",
)
COGNEE_SUMMARY = _cognee(
    f"{_COGNEE_100K}/hybrid_completion_20_20_qa_v1_cross_run_summary.json",
    "4207b31e1b7b5475356bacea30a49d207168d96701ff786ba96230235db01e40",
)
#: the code that made the scores and the summary, and the report that states them (read, never run)
COGNEE_CODE: tuple[Pin, ...] = (
    _cognee("eval/metrics/beam_rubric.py", "7e6eca8357fe4f80a7d1640ba92cd34e404d290c611a433f639f00ad1011676c"),
    _cognee("eval/metrics/kendall_tau.py", "59b7e65c89854696afde0059695529e29c01156f83d134b6cbd02801ebf7621c"),
    _cognee("eval/aggregate_cross_run.py", "8d1833678e8281ea55fa9a94d0645f69a4953766aefb06cec2b4d1e6b97648e2"),
    _cognee("REPORT.md", "34a77be18107d115cf98b89b56ab7be5888a57d2f43a29dc5dac9b69998dcd42"),
    _cognee("report_artifacts/README.md", "b33643d9cfbb964a2b7a39bac9771cb07b2279e2aad27d8487eb74a5869a6db7"),
)
COGNEE_PINS: tuple[Pin, ...] = (*COGNEE_RUNS, COGNEE_CONFIG, COGNEE_SUMMARY, *COGNEE_CODE)
