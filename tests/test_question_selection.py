"""Choosing questions as the anchors do (issue 40, item 5): `question_ids` (inspect's
`--sample-id`), a seeded stratified `question_sample` (lm-eval's `--samples`), beside the
`max_questions` prefix: the draw, the run id, the pack's record and label, verify, plan."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import FIXTURES, cli_in_process, scripted_reader

from memorybench.benchmarks.locomo.data import load_locomo
from memorybench.data import iter_questions
from memorybench.data.selection import for_identity, sample_per_kind, select_questions, selection_of, without_unset
from memorybench.errors import UserError
from memorybench.pack.success import reclose
from memorybench.pack.verify import verify_pack
from memorybench.plan import plan_runs

sys.path.insert(0, str(FIXTURES))
from make_longmemeval import TYPES, make_longmemeval  # noqa: E402

MINI = FIXTURES / "mini_locomo.json"


@pytest.fixture(scope="module")
def lme(tmp_path_factory) -> Path:
    return make_longmemeval(tmp_path_factory.mktemp("lme") / "lme.json")  # 20 questions, the six types in turn


def lme_questions(path: Path) -> list:
    from memorybench.data.source import load_dataset

    return list(iter_questions(load_dataset(path, "longmemeval_oracle")))


# -- the draw ------------------------------------------------------------------------------


def test_a_sample_is_the_same_for_a_seed_and_another_for_another_seed(lme):
    questions = lme_questions(lme)
    first = [q.question_id for q in sample_per_kind(questions, 1, seed=0)]
    assert first == [q.question_id for q in sample_per_kind(list(questions), 1, seed=0)]
    # pinned: a sha256 rank, the same on any machine, Python or numpy version
    assert first == ["lme000", "lme004_abs", "lme007", "lme011", "lme014_abs", "lme015"]
    draws = {tuple(q.question_id for q in sample_per_kind(questions, 1, seed=s)) for s in range(5)}
    assert len(draws) > 1  # another seed, another draw
    # in file order, whatever the rank
    order = [q.question_id for q in questions]
    assert first == sorted(first, key=order.index)


def test_a_sample_takes_n_of_each_kind_and_every_question_of_a_smaller_kind(lme):
    questions = lme_questions(lme)
    held = Counter(q.category for q in questions)
    assert sorted(held.values()) == [3, 3, 3, 3, 4, 4] and len(held) == len(TYPES)
    for n in (1, 2, 3, 4, 9):
        got = Counter(q.category for q in sample_per_kind(questions, n, seed=7))
        assert got == {kind: min(n, count) for kind, count in held.items()}
    # a question keeps its rank when the file gains others: a kind's draw from a superset
    # keeps the questions of the smaller draw that still rank first
    small = {q.question_id for q in sample_per_kind(questions[:12], 1, seed=3)}
    large = {q.question_id for q in sample_per_kind(questions, 1, seed=3)}
    assert all(qid in small for qid in large if int(qid[3:6]) < 12)


def test_question_ids_are_asked_in_file_order_and_an_unknown_one_is_one_line_with_the_fix(lme):
    questions = lme_questions(lme)
    chosen = select_questions(questions, {"question_ids": ["lme007", "lme002"]})
    assert [q.question_id for q in chosen] == ["lme002", "lme007"]
    with pytest.raises(UserError) as bad:
        select_questions(questions, {"question_ids": ["lme002", "lme0077"], "dataset": {"name": "longmemeval_oracle"}})
    message = str(bad.value)
    assert "\n" not in message and "'lme0077' is not a question id of dataset longmemeval_oracle" in message
    assert "Did you mean 'lme007'?" in message and "memorybench plan --questions" in message


@pytest.mark.parametrize(
    ("cfg", "words"),
    [
        ({"question_ids": ["a", "b", "a"]}, "question_ids lists 'a' twice"),
        ({"question_ids": []}, "question_ids=[] names no question"),
        ({"question_sample": {"per_kind": 0, "seed": 0}}, "question_sample.per_kind=0 must be at least 1"),
        ({"question_sample": {"per_kind": None, "seed": 4}}, "add question_sample.per_kind=N"),
        ({"max_questions": 5, "question_ids": ["a"]}, "max_questions and question_ids are set together"),
        ({"question_ids": ["a"], "question_sample": {"per_kind": 2, "seed": 0}}, "question_ids and question_sample.per_kind"),
    ],
)
def test_a_selection_that_makes_no_sense_is_refused_in_one_line(cfg, words):
    with pytest.raises(UserError) as bad:
        select_questions([], cfg)
    assert words in str(bad.value) and "\n" not in str(bad.value)


def test_the_cli_refuses_an_unknown_id_and_two_selections_before_any_call(tmp_path):
    done = cli_in_process(["plan", f"dataset.path={MINI}", "question_ids=[mini-1-q-0,mini-3-q-0]"], cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.strip()]
    assert "'mini-3-q-0' is not a question id" in line and "memorybench plan --questions" in line
    both = cli_in_process(["plan", "max_questions=3", "question_sample.per_kind=1"], cwd=tmp_path)
    assert both.returncode != 0 and "max_questions and question_sample.per_kind are set together" in both.stderr


# -- identity ------------------------------------------------------------------------------


def _id(*overrides: str) -> str:
    return plan_runs([f"dataset.path={MINI}", *overrides])[0].run_id


def test_the_run_id_changes_with_the_selection_and_not_otherwise():
    from memorybench.run_id import identity_config

    base = _id()
    spec = plan_runs([f"dataset.path={MINI}"])[0]
    # unset, the keys are not in the identity: a config from before they existed has the same id
    plain = dict(spec.cfg)
    old = {k: v for k, v in plain.items() if k not in ("question_ids", "question_sample")}
    assert identity_config(plain) == identity_config(old) and "question_ids" not in identity_config(plain)
    assert _id("question_sample.seed=0") == base and _id("question_ids=null") == base
    two = _id("question_ids=[mini-1-q-0,mini-2-q-3]")
    assert two != base and two == _id("question_ids=[mini-2-q-3,mini-1-q-0]")  # the order of the list asks nothing else
    assert _id("question_ids=[mini-1-q-0]") != two
    sample = _id("question_sample.per_kind=1")
    assert (
        len({base, two, sample, _id("question_sample.per_kind=2"), _id("question_sample.per_kind=1", "question_sample.seed=1")})
        == 5
    )
    assert _id("question_sample.per_kind=1", "question_sample.seed=0") == sample


def test_unset_keys_are_left_out_and_a_set_one_is_kept():
    assert without_unset({"a": 1, "question_ids": None, "question_sample": {"per_kind": None, "seed": 0}}) == {"a": 1}
    kept = {"question_ids": ["x"], "question_sample": {"per_kind": 2, "seed": 1}}
    assert without_unset(kept) == kept
    assert for_identity({"question_ids": ["b", "a"]}) == {"question_ids": ["a", "b"]}
    assert (
        selection_of({"question_sample": {"per_kind": 2, "seed": 1}}).describe()
        == "question_sample.per_kind=2 question_sample.seed=1"
    )


# -- a run, its record, its label, verify -------------------------------------------------


def _qa(folder: Path, server, *extra: str) -> Path:
    """A scripted qa run of the mini fixture into `folder`; its one pack."""
    done = cli_in_process(
        [
            "qa",
            *scripted_reader(server.base_url),
            f"dataset.path={MINI}",
            f"paths.packs={folder / 'packs'}",
            f"paths.cache={folder / 'cache'}",
            *extra,
        ],
        cwd=folder.parent,
    )
    assert done.returncode == 0, done.stderr
    (pack,) = (folder / "packs").glob("*/runs/*")
    return pack


def _rows(pack: Path) -> list[dict]:
    return [json.loads(line) for line in (pack / "predictions.jsonl").read_text().splitlines()]


def test_a_selected_run_records_its_selection_is_labelled_and_verifies(tmp_path, scripted_server):
    pack = _qa(tmp_path / "ids", scripted_server, "question_ids=[mini-2-q-1,mini-1-q-4]")
    assert [(r["question_id"], r["index"]) for r in _rows(pack)] == [("mini-1-q-4", 0), ("mini-2-q-1", 1)]
    meta = json.loads((pack / "run_meta.json").read_text())
    assert meta["is_prefix"] is True and meta["question_count"] == 2 and meta["max_questions"] is None
    assert meta["selection"] == {
        "by": "question_ids",
        "per_kind": None,
        "seed": None,
        "question_ids": ["mini-1-q-4", "mini-2-q-1"],
        "by_kind": {"1": [0, 2], "2": [1, 2], "3": [0, 2], "4": [0, 2], "5": [1, 2]},
    }
    assert "Subset run: 2 of 10 questions chosen by id (question_ids), asked in file order." in meta["notes"]
    metrics = json.loads((pack / "metrics.json").read_text())
    assert metrics["is_prefix"] is True and metrics["selection"]["by"] == "question_ids"
    assert verify_pack(pack) == []

    sample = _qa(tmp_path / "sample", scripted_server, "question_sample.per_kind=1", "question_sample.seed=3")
    meta = json.loads((sample / "run_meta.json").read_text())
    assert meta["selection"]["by_kind"] == {str(c): [1, 2] for c in range(1, 6)}
    assert meta["selection"]["question_ids"] == [r["question_id"] for r in _rows(sample)]
    assert "question_sample:\n  per_kind: 1\n  seed: 3\n" in (sample / "config.resolved.yaml").read_text()
    assert verify_pack(sample) == []
    table = cli_in_process(["rescore", str(sample)], cwd=tmp_path)
    assert "Subset: 5 questions, a sample of up to 1 per kind, seed 3 (question_sample); not the whole benchmark." in table.stdout


def test_verify_finds_a_subset_pack_that_lost_a_row_or_lies_about_its_selection(tmp_path, scripted_server):
    pack = _qa(tmp_path / "a", scripted_server, "question_sample.per_kind=1")
    assert verify_pack(pack) == []
    meta_path = pack / "run_meta.json"
    meta = json.loads(meta_path.read_text())
    meta["selection"]["question_ids"] = ["mini-1-q-0", *meta["selection"]["question_ids"][1:]]
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    reclose(pack, ["run_meta.json"])
    findings = [f for f in verify_pack(pack) if f.code == "count"]
    assert any(
        "selection records" in f.message and "question_sample.per_kind=1 question_sample.seed=0" in f.message for f in findings
    ), findings

    # the last row lost, and a question outside the sample in its place
    other = _qa(tmp_path / "b", scripted_server, "question_sample.per_kind=1", "question_sample.seed=1")
    rows = [json.loads(line) for line in (other / "predictions.jsonl").read_text().splitlines()]
    sampled = {r["question_id"] for r in rows}
    stranger = next(q.question_id for q in iter_questions(load_locomo(MINI)) if q.question_id not in sampled)
    rows[-1]["question_id"] = stranger
    (other / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    reclose(other, ["predictions.jsonl"])
    messages = [f.message for f in verify_pack(other) if f.code == "count"]
    assert any(
        f"{stranger} is not among the run's 5 questions (chosen by question_sample.per_kind=1 question_sample.seed=1, in file order)"
        in m
        for m in messages
    ), messages
    assert any("1 of the run's 5 questions have no row" in m for m in messages), messages


def test_a_selection_in_the_pack_must_be_the_configs(tmp_path, scripted_server):
    pack = _qa(tmp_path / "ids", scripted_server, "question_ids=[mini-1-q-0,mini-2-q-0]")
    meta_path = pack / "run_meta.json"
    meta = json.loads(meta_path.read_text())
    meta["selection"]["question_ids"] = ["mini-1-q-0"]
    meta["question_count"] = 1
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    reclose(pack, ["run_meta.json"])
    messages = [f.message for f in verify_pack(pack) if f.code == "count"]
    assert any("selection records 1 question ids" in m for m in messages), messages
    assert any("question_count=1, but question_ids (2 listed) over the dataset's 10 questions gives 2" in m for m in messages)


# -- plan ----------------------------------------------------------------------------------


def test_plan_questions_shows_the_sample_with_its_count_of_each_kind(lme, tmp_path):
    done = cli_in_process(
        ["plan", "--questions", "dataset=longmemeval_oracle", f"dataset.path={lme}", "question_sample.per_kind=1"], cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = lines.index("question_id\tkind\tabstention\tsessions\tturns\thaystack_tokens")
    said = lines[header - 1]
    assert said.startswith("questions: 6 of 20, question_sample.per_kind=1 question_sample.seed=0, in file order; by kind")
    assert "1 single-session-user 1/4" in said and "6 knowledge-update 1/3" in said
    rows = [line.split("\t") for line in lines[header + 1 :] if line.startswith("lme")]
    assert [r[0] for r in rows] == ["lme000", "lme004_abs", "lme007", "lme011", "lme014_abs", "lme015"]
    assert sorted(r[1].split()[0] for r in rows) == ["1", "2", "3", "4", "5", "6"]
    ids = cli_in_process(
        ["plan", "--questions", "dataset=longmemeval_oracle", f"dataset.path={lme}", "question_ids=[lme005,lme004_abs]"],
        cwd=tmp_path,
    )
    assert ids.returncode == 0, ids.stderr
    assert "questions: 2 of 20, question_ids (2 listed), in file order" in ids.stdout
    assert [x.split("\t")[0] for x in ids.stdout.splitlines() if x.startswith("lme")] == ["lme004_abs", "lme005"]
    prefix = cli_in_process(["plan", "--questions", f"dataset.path={MINI}", "max_questions=3"], cwd=tmp_path)
    assert "questions: the first 3 of 10 in file order (max_questions=3)" in prefix.stdout


def test_the_judge_and_the_report_name_a_selection_as_the_part_it_is(tmp_path, scripted_server):
    from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

    pack = _qa(tmp_path / "ids", scripted_server, "question_ids=[mini-2-q-1,mini-1-q-4]")
    with ScriptedOpenAIServer(responder=lambda body: Reply(json.dumps({"label": "CORRECT"}))) as judge:
        done = cli_in_process(
            ["autorater", str(pack), "judge=openai_compatible", f"judge.base_url={judge.base_url}", "judge.model=judge-x"],
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    # the judge's notes say which questions, as the qa table does, never "the first 2 questions (max_questions)"
    assert "Subset: 2 questions, chosen by id (question_ids); not the whole benchmark." in done.stdout
    assert "max_questions" not in done.stdout
