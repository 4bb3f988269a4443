"""Hostile and careless inputs beyond tests/test_bad_inputs.py (issue 19, items 5, 7, 8).

Each case runs the real CLI entry point (in this process: a subprocess per case would
spend most of the module importing memorybench) and must end in one line and no traceback: datasets that are symlink loops, FIFOs, nested a hundred
thousand deep or hold lone surrogates; packs and caches that are loops, files or
unwritable; pack files with a bad byte, a wrong type or the wrong JSON kind, through every
stage that reads them. Edits that a finished pack's `_SUCCESS` does not vouch for (a
verdict label, a duplicated verdict row, an answer edited in both predictions files, the
dataset switched in run_meta) are `verify` findings.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FIXTURES, CliOutcome, cli_in_process, scripted_reader

MINI = FIXTURES / "mini_locomo.json"
DEAD = ["reader=openai_compatible", "reader.base_url=http://127.0.0.1:9/v1", "reader.model=dead", "reader.max_retries=0"]
DEAD_JUDGE = ["judge=openai_compatible", "judge.base_url=http://127.0.0.1:9/v1", "judge.model=dead", "judge.max_retries=0"]


@dataclass(frozen=True)
class Case:
    id: str
    args: Callable[[Path], list[str]]
    #: text the one error line holds; for a finding, its code
    expect: str
    finding: bool = False


def qa(*extra: str) -> Callable[[Path], list[str]]:
    return lambda root: [
        "qa",
        *DEAD,
        f"paths.packs={root}/packs",
        f"paths.cache={root}/cache",
        *(e.format(root=root) for e in extra),
    ]


def cmd(*args: str) -> Callable[[Path], list[str]]:
    return lambda root: [a.format(root=root) for a in args]


BROKEN_PACKS = {
    # name: (file, edit of its bytes)
    "pred-not-utf8": ("predictions.jsonl", lambda b: b.replace(b"scripted", b"scr\xffipted", 1)),
    "pred-category-text": ("predictions.jsonl", lambda b: b.replace(b'"category":2', b'"category":"2"', 1)),
    "pred-nested": ("predictions.jsonl", lambda b: b"[" * 100_000 + b"]" * 100_000 + b"\n" + b),
    "meta-not-utf8": ("run_meta.json", lambda b: b.replace(b'"run_id"', b'"run_\xffid"', 1)),
    "meta-a-list": ("run_meta.json", lambda b: b"[]"),
}
STAGES = {
    "rescore": lambda pack: ["rescore", pack],
    "autorater": lambda pack: ["autorater", pack, *DEAD_JUDGE],
    "aggregate": lambda pack: ["aggregate", pack, "--out", f"{pack}-aggregate"],
    "compare": lambda pack: ["compare", pack],
    "show": lambda pack: ["show", pack, "mini-1-q-1"],
}
EXPECT = {
    "pred-not-utf8": "predictions.jsonl",
    "pred-category-text": "predictions.jsonl",
    "pred-nested": "predictions.jsonl",
    "meta-not-utf8": "run_meta.json",
    "meta-a-list": "run_meta.json",
}

CASES: list[Case] = [
    # datasets
    Case("data-symlink-loop", qa("dataset.path={root}/loop-a"), "dataset.path={root}/loop-a cannot be followed (a symlink loop)"),
    Case("data-fifo", qa("dataset.path={root}/fifo"), "is a FIFO, not a regular file"),
    Case("data-nested", qa("dataset.path={root}/nested.json"), "nests its JSON deeper than any released file"),
    Case(
        "data-surrogate-question",
        qa("dataset.path={root}/surrogate-question.json"),
        "surrogate-question.json[0].qa[0].question: key 'question' holds a lone surrogate '\\ud800' at character 13",
    ),
    Case("data-surrogate-turn", qa("dataset.path={root}/surrogate-turn.json"), "key 'text' holds a lone surrogate"),
    # folders the run writes
    Case(
        "packs-symlink-loop",
        qa(f"dataset.path={MINI}", "paths.packs={root}/loop-a"),
        "paths.packs={root}/loop-a cannot be followed",
    ),
    Case(
        "cache-symlink-loop",
        qa(f"dataset.path={MINI}", "paths.cache={root}/loop-a"),
        "paths.cache={root}/loop-a cannot be followed",
    ),
    Case(
        "cache-under-a-file",
        qa(f"dataset.path={MINI}", "paths.cache={root}/a-file/cache"),
        "paths.cache={root}/a-file/cache is not a writable folder",
    ),
    Case(
        "packs-under-a-file",
        qa(f"dataset.path={MINI}", "paths.packs={root}/a-file/packs"),
        "is not a writable folder (Not a directory); set paths.packs",
    ),
    Case("packs-in-proc", qa(f"dataset.path={MINI}", "paths.packs=/proc/self/memorybench"), "is not a writable folder"),
    # broken pack files, through every stage that reads them
    *(
        Case(f"{name}-{stage}", lambda root, n=name, s=stage: STAGES[s](f"{root}/broken/{n}"), EXPECT[name])
        for name in BROKEN_PACKS
        for stage in STAGES
    ),
    *(
        Case(f"{name}-verify", cmd("verify", f"{{root}}/broken/{name}"), code, finding=True)
        for name, code in (
            ("pred-not-utf8", "json"),
            ("pred-category-text", "schema"),
            ("pred-nested", "json"),
            ("meta-a-list", "schema"),
        )
    ),
    # edits _SUCCESS does not vouch for
    Case("edited-verdict-label", cmd("verify", "{root}/edited/verdict-label"), "success.hash_mismatch", finding=True),
    Case("duplicated-verdict", cmd("verify", "{root}/edited/verdict-twice"), "success.hash_mismatch", finding=True),
    Case("edited-answer-both-files", cmd("verify", "{root}/edited/answer-both"), "success.hash_mismatch", finding=True),
    Case("switched-dataset", cmd("verify", "{root}/edited/dataset-switched"), "hash.data", finding=True),
]


def _prepare(root: Path) -> None:
    from memorybench.cli import main
    from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

    (root / "loop-a").symlink_to(root / "loop-b")
    (root / "loop-b").symlink_to(root / "loop-a")
    os.mkfifo(root / "fifo")
    (root / "a-file").write_text("not a folder\n")
    (root / "nested.json").write_text("[" * 100_000 + "]" * 100_000)
    text = MINI.read_text("utf-8")
    (root / "surrogate-question.json").write_text(text.replace("What did Ana start?", "What did Ana \\ud800start?", 1), "utf-8")
    data = json.loads(text)
    turn = data[0]["conversation"]["session_1"][0]
    raw = json.dumps(data).replace(json.dumps(turn["text"]), json.dumps(turn["text"])[:-1] + '\\udfff"', 1)
    (root / "surrogate-turn.json").write_text(raw, "utf-8")

    with ScriptedOpenAIServer() as server:
        assert (
            main(
                [
                    "qa",
                    *scripted_reader(server.base_url),
                    f"dataset.path={MINI}",
                    f"paths.packs={root / 'packs'}",
                    f"paths.cache={root / 'cache'}",
                    "name=good",
                ]
            )
            == 0
        )
    (good,) = (root / "packs" / "good" / "runs").iterdir()
    for name, (relpath, edit) in BROKEN_PACKS.items():
        shutil.copytree(good, root / "broken" / name)
        path = root / "broken" / name / relpath
        path.write_bytes(edit(path.read_bytes()))

    judged = root / "judged"
    shutil.copytree(good, judged)
    with ScriptedOpenAIServer(responder=lambda body: Reply('{"label": "CORRECT"}', model="judge-x")) as judge:
        assert (
            main(["autorater", str(judged), "judge=openai_compatible", f"judge.base_url={judge.base_url}", "judge.model=judge-x"])
            == 0
        )
    (verdicts,) = judged.glob("autorater/*/autorater_verdicts.jsonl")
    relverdicts = verdicts.relative_to(judged)
    edited = root / "edited"
    for name in ("verdict-label", "verdict-twice", "answer-both", "dataset-switched"):
        shutil.copytree(judged, edited / name)
    path = edited / "verdict-label" / relverdicts
    path.write_bytes(path.read_bytes().replace(b'"CORRECT"', b'"WRONG"', 1))
    path = edited / "verdict-twice" / relverdicts
    first = path.read_bytes().split(b"\n")[0]
    path.write_bytes(path.read_bytes() + first + b"\n")
    for relpath in ("predictions.jsonl", "predictions.csv"):
        path = edited / "answer-both" / relpath
        path.write_bytes(path.read_bytes().replace(b"scripted", b"pottery!", 1))
    copy = root / "edited-copy.json"
    copy.write_text(text.replace("pottery", "painting"), "utf-8")
    meta_path = edited / "dataset-switched" / "run_meta.json"
    meta = json.loads(meta_path.read_text("utf-8"))
    from memorybench.hashing import sha256_file

    meta["data"] = {**meta["data"], "path": str(copy), "sha256": sha256_file(copy)}
    meta_path.write_text(json.dumps(meta, indent=2), "utf-8")
    # the marker made to vouch for the switch, as a careful forger would: only the config disagrees
    from memorybench.pack.success import reclose

    reclose(edited / "dataset-switched", ["run_meta.json"])


Outcome = CliOutcome


def _run(args: list[str]) -> Outcome:
    """`memorybench ARGS` as the console runs it; an exception that escapes is a traceback."""
    return cli_in_process(args)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, tuple[Outcome, Path]]:
    root = tmp_path_factory.mktemp("hostile")
    _prepare(root)
    here = os.getcwd()
    os.chdir(root)  # a default path that fell back to the current folder would show under root
    try:
        return {case.id: (_run(case.args(root)), root) for case in CASES}
    finally:
        os.chdir(here)


def test_the_corpus_covers_every_stage():
    assert len(CASES) == len({c.id for c in CASES}) >= 40


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input_is_one_line_and_no_traceback(case: Case, results):
    result, root = results[case.id]
    shown = f"exit {result.returncode}\nstdout: {result.stdout[-1200:]}\nstderr: {result.stderr[-1200:]}"
    assert result.returncode != 0 and "Traceback" not in result.stdout + result.stderr, shown
    expect = case.expect.format(root=root)
    if case.finding:
        assert result.returncode == 1 and any(line.startswith(f"{expect} ") for line in result.stdout.splitlines()), shown
        return
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("memorybench: error: ") and expect in lines[0], shown


def test_no_hostile_case_wrote_outside_its_folders(results):
    _, root = next(iter(results.values()))
    assert not (root / "outputs").exists()  # nothing fell back to the current directory
    assert not list((root / "packs").glob("default/runs/*/_SUCCESS"))  # no dead-reader run finished
