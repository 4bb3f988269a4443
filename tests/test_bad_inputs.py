"""A corpus of malformed inputs, each run through the real CLI entry point.

Every case must exit non-zero with no traceback and one line that names the problem:
data files with a required key missing or mistyped, wrong encodings, empty files, bad
config values and unknown options, bad pack folders given to `rescore`, `verify`,
`autorater`, `aggregate` and `compare`, and usage errors of `wave` and `task`.
For `verify`, a pack that is a pack but a broken one is not an error: it exits 1 and
prints its findings, one `CODE path: message` line each (stdout), nothing on stderr.

A case that exposes a gap in code this file does not own is marked xfail(strict=True)
with the fix in its reason, so the suite stays green and the gap stays visible; once
fixed, the case XPASSes and the mark must go.

Each case calls `memorybench.cli.main` in this process, as the console script does
(an exception that escapes it is the traceback a user would see): a subprocess per case
spent about 3.5 s of CPU importing the qa stage each, most of this module's time. Only a
representative set of data files goes through the CLI; every data variant is also loaded
directly, where each takes milliseconds.
"""

from __future__ import annotations

import copy
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, CliOutcome, cli_in_process, scripted_reader

MINI = FIXTURES / "mini_locomo.json"
CLI_PREFIX = [sys.executable, "-m", "memorybench.cli"]
DEAD_READER = ["reader=openai_compatible", "reader.base_url=http://127.0.0.1:9/v1", "reader.model=dead", "reader.max_retries=0"]


@dataclass(frozen=True)
class Case:
    id: str
    #: the command, given the corpus folder (data files and packs live there)
    command: Callable[[Path], list[str]]
    #: text the one error line must contain; for kind="finding", the finding code
    expect: str
    kind: str = "error"
    #: a gap in code owned elsewhere: why it fails today and the fix
    xfail: str | None = None


def cli(*args: str) -> Callable[[Path], list[str]]:
    return lambda root: [sys.executable, "-m", "memorybench.cli", *(a.format(root=root) for a in args)]


def qa(*overrides: str) -> Callable[[Path], list[str]]:
    return lambda root: [
        sys.executable,
        "-m",
        "memorybench.cli",
        "qa",
        *DEAD_READER,
        f"paths.packs={root}/packs",
        f"paths.cache={root}/cache",
        *(o.format(root=root) for o in overrides),
    ]


def verify(*args: str) -> Callable[[Path], list[str]]:
    return lambda root: [*CLI_PREFIX, "verify", *(a.format(root=root) for a in args)]


# -- data files: a mutated copy of the mini fixture, or raw bytes ---------------------------------

Mutation = Callable[[list[dict[str, Any]]], Any]


@dataclass(frozen=True)
class DataVariant:
    name: str
    mutation: Mutation | bytes
    expect: str
    #: also run through `memorybench qa` in a subprocess
    cli: bool = False

    def build(self) -> bytes:
        if isinstance(self.mutation, bytes):
            return self.mutation
        return json.dumps(self.mutation(json.loads(MINI_TEXT)), indent=1).encode("utf-8")


def conv(i: int, change: Callable[[dict[str, Any]], None]) -> Mutation:
    def mutate(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        change(data[i])
        return data

    return mutate


def drop(*path: Any) -> Mutation:
    def change(node: Any) -> None:
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return conv(0, change)


def put(value: Any, *path: Any) -> Mutation:
    def change(node: Any) -> None:
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return conv(0, change)


MINI_TEXT = MINI.read_text("utf-8")

DATA_VARIANTS: list[DataVariant] = [
    # every key the loader requires, missing or of the wrong type
    DataVariant("no-sample-id", drop("sample_id"), "missing key 'sample_id'", cli=True),
    DataVariant("int-sample-id", put(7, "sample_id"), "key 'sample_id' must be str, got int"),
    DataVariant("no-conversation", drop("conversation"), "missing key 'conversation'"),
    DataVariant("list-conversation", put([], "conversation"), "key 'conversation' must be dict, got list", cli=True),
    DataVariant("no-speaker-a", drop("conversation", "speaker_a"), "missing key 'speaker_a'"),
    DataVariant("int-speaker-b", put(2, "conversation", "speaker_b"), "key 'speaker_b' must be str, got int"),
    DataVariant("no-session-date", drop("conversation", "session_1_date_time"), "missing key 'session_1_date_time'"),
    DataVariant(
        "no-sessions",
        conv(0, lambda c: [c["conversation"].pop(k) for k in ("session_1", "session_2")]),
        "conversation has no session_N lists",
    ),
    DataVariant("turn-not-object", put("hi", "conversation", "session_1", 0), "a turn must be a JSON object, got str"),
    DataVariant(
        "turn-no-speaker", drop("conversation", "session_1", 1, "speaker"), "session_1[1]: missing key 'speaker'", cli=True
    ),
    DataVariant("turn-int-dia-id", put(3, "conversation", "session_2", 0, "dia_id"), "key 'dia_id' must be str, got int"),
    DataVariant("turn-no-text", drop("conversation", "session_2", 1, "text"), "missing key 'text'"),
    DataVariant(
        "turn-null-text", put(None, "conversation", "session_2", 1, "text"), "key 'text' must be str, got NoneType", cli=True
    ),
    DataVariant(
        "turn-int-caption", put(5, "conversation", "session_1", 2, "blip_caption"), "key 'blip_caption' must be str, got int"
    ),
    DataVariant("no-qa", drop("qa"), "missing key 'qa'", cli=True),
    DataVariant("qa-row-list", put(["q", "a"], "qa", 0), "qa[0]: a qa row must be a JSON object, got list"),
    DataVariant("no-category", drop("qa", 3, "category"), "qa[3]: missing key 'category'"),
    DataVariant("str-category", put("4", "qa", 0, "category"), "key 'category' must be int, got str", cli=True),
    DataVariant("category-7", put(7, "qa", 1, "category"), "category 7 is not one of 1, 2, 3, 4, 5"),
    DataVariant("bool-category", put(True, "qa", 1, "category"), "key 'category' must be int, got bool"),
    DataVariant("no-question", drop("qa", 2, "question"), "missing key 'question'"),
    DataVariant("int-question", put(12, "qa", 2, "question"), "key 'question' must be str, got int"),
    DataVariant("list-answer", put(["pottery"], "qa", 0, "answer"), "key 'answer' must be str or int, got list"),
    DataVariant("bool-answer", put(False, "qa", 0, "answer"), "key 'answer' must be str or int, got bool"),
    DataVariant(
        "no-answer-category-4", drop("qa", 0, "answer"), "missing key 'answer' (only category 5 rows may lack it)", cli=True
    ),
    DataVariant("int-adversarial", put(1, "qa", 4, "adversarial_answer"), "key 'adversarial_answer' must be str, got int"),
    DataVariant("str-evidence", put("D1:1", "qa", 0, "evidence"), "key 'evidence' must be list, got str"),
    DataVariant("list-session-summary", put([], "session_summary"), "key 'session_summary' must be dict, got list"),
    DataVariant("duplicate-sample-id", lambda d: [d[0], copy.deepcopy(d[0])], "sample_id 'mini-1' occurs twice"),
    # the file as a whole
    DataVariant("top-level-object", lambda d: {"conversations": d}, "must hold a non-empty JSON list of conversations, got dict"),
    DataVariant("empty-list", lambda d: [], "must hold a non-empty JSON list of conversations", cli=True),
    DataVariant("item-not-object", lambda d: ["mini-1"], "a conversation must be a JSON object, got str"),
    DataVariant("latin-1", MINI_TEXT.replace("Lisbon", "Lisbõn").encode("latin-1"), "is not UTF-8", cli=True),
    DataVariant("utf-16", MINI_TEXT.encode("utf-16"), "is not UTF-8", cli=True),
    DataVariant("utf-8-bom", b"\xef\xbb\xbf" + MINI_TEXT.encode("utf-8"), "Unexpected UTF-8 BOM"),
    DataVariant("empty-file", b"", "is not valid JSON", cli=True),
    DataVariant("whitespace-only", b" \n\t\n", "is not valid JSON"),
    DataVariant("truncated", MINI_TEXT.encode("utf-8")[:700], "is not valid JSON"),
]
DIRECTORY_XFAIL = (
    "IsADirectoryError traceback: data/locomo.py load_locomo catches only FileNotFoundError around "
    "path.read_bytes(); catch IsADirectoryError (OSError) too and raise DataError('dataset file X is a folder, "
    "not a file; set dataset.path to the JSON file')"
)

CASES: list[Case] = [
    *(Case(f"data-{v.name}", qa(f"dataset.path={{root}}/data/{v.name}.json"), v.expect) for v in DATA_VARIANTS if v.cli),
    Case("data-directory", qa("dataset.path={root}/data"), "data"),
    # configuration: bad values and unknown options (all fail before any data is read)
    Case("cfg-unknown-memory", qa("memory=fullcontext"), "unknown memory option 'fullcontext'. Did you mean 'full_context'?"),
    Case("cfg-unknown-dataset", qa("dataset=nope"), "unknown dataset option 'nope'"),
    Case("cfg-unknown-answerer", qa("answerer=agent"), "unknown answerer option 'agent'"),
    Case("cfg-unknown-reader", qa("reader=nope"), "unknown reader option 'nope'. Did you mean 'openai'?"),
    Case("cfg-unknown-writer", qa("writer=nope"), "unknown writer option 'nope'"),
    Case("cfg-unknown-judge", qa("judge=nope"), "unknown judge option 'nope'"),
    Case("cfg-unknown-experiment", qa("-m", "experiment=nope"), "unknown experiment option 'nope'"),
    Case("cfg-unknown-launcher", qa("hydra/launcher=nope"), "Could not find 'hydra/launcher/nope'"),
    Case("cfg-deleted-group", qa("~reader"), "Missing mandatory value: reader"),
    Case("cfg-unknown-in-sweep", qa("-m", "memory=full_context,nope"), "unknown memory option 'nope'"),
    Case(
        "cfg-misspelt-key",
        qa("reader.temprature=0"),
        "unknown key 'reader.temprature' (reader.temprature=0). Did you mean 'temperature'?",
    ),
    Case("cfg-misspelt-group", qa("memroy=rag"), "unknown config group or key 'memroy' (memroy=rag). Did you mean 'memory'?"),
    Case("cfg-unknown-top-key", qa("frob=1"), "unknown config group or key 'frob'"),
    Case("cfg-override-without-value", qa("max_questions"), "Error parsing override 'max_questions'"),
    Case("cfg-max-questions-text", qa("max_questions=abc"), "could not be converted to Integer"),
    Case("cfg-max-questions-float", qa("max_questions=1.5"), "could not be converted to Integer"),
    Case("cfg-max-questions-ambiguous", qa("max_questions=1,2"), "Ambiguous value for argument 'max_questions=1,2'"),
    Case("cfg-plan-sweep-bad-value", cli("plan", "-m", "max_questions=0,1"), "max_questions=0 must be at least 1"),
    Case("cfg-max-questions-zero", qa("max_questions=0"), "max_questions=0 must be at least 1"),
    Case("cfg-max-tokens-zero", qa("reader.max_tokens=0"), "reader.max_tokens=0 must be at least 1"),
    Case("cfg-negative-temperature", qa("reader.temperature=-1"), "reader.temperature=-1.0 must be >= 0"),
    Case("cfg-temperature-list", qa("reader.temperature=[1,2]"), "of type 'list' could not be converted to Float"),
    Case("cfg-max-tokens-text", qa("reader.max_tokens=abc"), "could not be converted to Integer"),
    Case("cfg-cache-not-bool", qa("reader.cache=maybe"), "is not a valid bool"),
    Case("cfg-temperature-text", qa("reader.temperature=hot"), "could not be converted to Float"),
    Case("cfg-negative-interval", qa("reader.min_request_interval_s=-1"), "reader.min_request_interval_s=-1.0 must be >= 0"),
    Case("cfg-seed-text", qa("reader.seed=abc"), "could not be converted to Integer"),
    Case("cfg-unknown-provider", qa("reader.provider=foo"), "reader.provider='foo' is unknown"),
    Case("cfg-no-base-url", cli("qa", "reader=openai_compatible", "reader.model=x"), "reader.base_url is required"),
    Case("cfg-no-model", qa("reader.model=null"), "reader.model is required"),
    Case("cfg-bad-memory-source", qa("memory=session_summaries", "memory.source=bogus"), "memory.source='bogus' is not one of"),
    Case("cfg-writer-source-without-writer", qa("memory=session_summaries", "memory.source=writer"), "needs a writer model"),
    Case("cfg-plan-unknown-memory", cli("plan", "memory=nope"), "unknown memory option 'nope'"),
    Case("cfg-unknown-command", cli("frobnicate"), "unknown command 'frobnicate'"),
    Case(
        "cfg-negative-max-retries",
        qa(f"dataset.path={MINI}", "reader.max_retries=-1"),
        "max_retries",
    ),
    Case(
        "cfg-negative-timeout",
        qa(f"dataset.path={MINI}", "reader.timeout_s=-1"),
        "timeout_s",
    ),
    Case(
        "cfg-appended-unknown-key",
        qa(f"dataset.path={MINI}", "+foo=1"),
        "foo",
    ),
    Case(
        "cfg-unknown-flag",
        cli("qa", "--frob"),
        "--frob",
    ),
    Case(
        "cli-fetch-unknown-flag",
        cli("fetch", "--bogus"),
        "unrecognized arguments: --bogus",
    ),
    # rescore: folders that are not (whole) packs
    Case("rescore-empty-folder", cli("rescore", "{root}/empty"), "is not a pack: it has no predictions.jsonl"),
    Case(
        "rescore-file-not-folder",
        cli("rescore", "{root}/a-file.txt"),
        "not a folder",
    ),
    Case(
        "rescore-corrupt-line",
        cli("rescore", "{root}/corrupt"),
        "predictions.jsonl",
    ),
    Case(
        "rescore-missing-run-meta",
        cli("rescore", "{root}/no-run-meta"),
        "run_meta.json",
    ),
    # verify: not a pack (one error line), or a broken pack (findings on stdout, exit 1)
    Case("verify-missing-folder", verify("{root}/nothing"), "does not exist"),
    Case("verify-empty-folder", verify("{root}/empty"), "is not a pack"),
    Case("verify-file-not-folder", verify("{root}/a-file.txt"), "is a file, not a pack folder"),
    Case("verify-design-folder", verify("{root}/packs/good"), "under runs/: pass them"),
    Case("verify-no-args", verify(), "the following arguments are required: PACK"),
    Case("verify-unknown-flag", verify("{root}/corrupt", "--frob"), "unrecognized arguments: --frob"),
    Case("verify-corrupt-line", verify("{root}/corrupt"), "json", kind="finding"),
    Case("verify-missing-run-meta", verify("{root}/no-run-meta"), "file.missing", kind="finding"),
    Case("verify-schema-bumped", verify("{root}/schema-bumped"), "schema", kind="finding"),
    # later stages: autorater, aggregate, compare, wave, task
    Case("autorater-missing-folder", cli("autorater", "{root}/nothing"), "pack folder"),
    Case("autorater-file-not-folder", cli("autorater", "{root}/a-file.txt"), "is a file, not a folder"),
    Case("autorater-empty-folder", cli("autorater", "{root}/empty"), "is not a pack: it has no predictions.jsonl"),
    Case("autorater-zero-passes", cli("autorater", "{root}/empty", "--passes", "0"), "--passes 0 must be at least 1"),
    Case("autorater-unknown-flag", cli("autorater", "{root}/empty", "--frob"), "unrecognized arguments: --frob"),
    Case("aggregate-missing-folder", cli("aggregate", "{root}/nothing"), "is not a folder"),
    Case("aggregate-file-not-folder", cli("aggregate", "{root}/a-file.txt"), "is not a folder"),
    Case("aggregate-no-packs", cli("aggregate", "{root}/empty"), "no pack under"),
    Case("compare-unfinished", cli("compare", "{root}/empty"), "is not finished (no _SUCCESS)"),
    Case("wave-no-root", cli("wave", "autorater"), "the following arguments are required: --root"),
    Case("task-bad-index", cli("task", "--index", "one"), "argument --index: invalid int value: 'one'"),
]


def _prepare(root: Path, server) -> None:
    (root / "data").mkdir(parents=True)
    for variant in DATA_VARIANTS:
        if variant.cli:
            (root / "data" / f"{variant.name}.json").write_bytes(variant.build())
    (root / "empty").mkdir()
    (root / "a-file.txt").write_text("not a pack\n")

    from memorybench.cli import main

    args = [
        "qa",
        *scripted_reader(server.base_url),
        f"dataset.path={MINI}",
        f"paths.packs={root / 'packs'}",
        f"paths.cache={root / 'cache'}",
        "name=good",
    ]
    assert main(args) == 0
    (good,) = (root / "packs" / "good" / "runs").iterdir()
    for name in ("corrupt", "no-run-meta", "schema-bumped"):
        shutil.copytree(good, root / name)
    shutil.copytree(good, good.parent / "second-run")  # a design folder of two packs (one would stand for its pack)
    lines = (root / "corrupt" / "predictions.jsonl").read_bytes().splitlines(keepends=True)
    lines[4] = b'{"schema": "prediction.v1", "question_id": "mini-1-q-4", "pred\n'
    (root / "corrupt" / "predictions.jsonl").write_bytes(b"".join(lines))
    (root / "no-run-meta" / "run_meta.json").unlink()
    bumped = root / "schema-bumped" / "predictions.jsonl"
    bumped.write_bytes(bumped.read_bytes().replace(b'"prediction.v1"', b'"prediction.v9"', 1))


SLOW = ("data-", "rescore-", "cfg-negative-max-retries", "cfg-negative-timeout", "cfg-appended-unknown-key")


Outcome = CliOutcome


def _run(command: list[str], root: Path) -> Outcome:
    """`memorybench ARGS` in this process, from `root`: its exit code and what it printed."""
    assert command[:3] == CLI_PREFIX, command
    return cli_in_process(command[3:], root)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Outcome]:
    from memorybench.testing.scripted_server import ScriptedOpenAIServer

    root = tmp_path_factory.mktemp("bad_inputs")
    with ScriptedOpenAIServer() as server:
        _prepare(root, server)
    # the slow ones (they import the qa or rescore stage) first, so the two workers finish together
    order = sorted(CASES, key=lambda c: not c.id.startswith(SLOW))
    return {case.id: _run(case.command(root), root) for case in order}


def test_the_corpus_is_large_and_unique():
    assert len(CASES) >= 50
    assert len({c.id for c in CASES}) == len(CASES)
    assert len({v.name for v in DATA_VARIANTS}) == len(DATA_VARIANTS) >= 35


@pytest.mark.parametrize("variant", DATA_VARIANTS, ids=[v.name for v in DATA_VARIANTS])
def test_every_data_variant_is_one_data_error(variant: DataVariant, tmp_path):
    from memorybench.benchmarks.locomo.data import load_locomo
    from memorybench.errors import DataError

    path = tmp_path / f"{variant.name}.json"
    path.write_bytes(variant.build())
    with pytest.raises(DataError) as caught:
        load_locomo(path)
    assert variant.expect in caught.value.message and "\n" not in caught.value.message


def test_a_folder_as_dataset_is_a_data_error(tmp_path):
    from memorybench.benchmarks.locomo.data import load_locomo
    from memorybench.errors import DataError

    with pytest.raises(DataError, match="folder"):
        load_locomo(tmp_path)


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []) for c in CASES],
)
def test_bad_input_fails_with_one_line_and_no_traceback(case: Case, results):
    result = results[case.id]
    shown = f"exit {result.returncode}\nstdout: {result.stdout[-1500:]}\nstderr: {result.stderr[-1500:]}"
    assert result.returncode != 0, shown
    assert "Traceback" not in result.stderr + result.stdout, shown
    if case.kind == "finding":
        assert result.returncode == 1 and not result.stderr.strip(), shown
        assert any(line.startswith(f"{case.expect} ") for line in result.stdout.splitlines()), shown
        return
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, shown
    assert lines[0].startswith("memorybench: error: ") and case.expect in lines[0], shown
