"""LongMemEval's retrieval metrics against the authors' pinned eval_utils.py, run_retrieval.py
and print_retrieval_metrics.py, on made haystacks and rankings (issue 32, item 4)."""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys

import pytest

from memorybench.benchmarks.longmemeval.retrieval import (
    KS,
    PRINTED,
    QuestionRetrieval,
    authors_retrieval_report,
    average_metrics,
    build_corpus,
    dcg,
    evaluate_retrieval,
    evaluate_retrieval_turn2session,
    metric_names,
    ndcg,
    question_metrics,
    ranking_from_keys,
)
from memorybench.data import pins
from memorybench.benchmarks.longmemeval.pins import EVAL_UTILS, PRINT_RETRIEVAL_METRICS, RUN_RETRIEVAL
from memorybench.errors import UserError
from score.longmemeval_authors import load_eval_utils


@pytest.fixture(scope="module")
def eval_utils():
    return load_eval_utils(EVAL_UTILS)


def _run_retrieval_tree() -> ast.Module:
    return ast.parse(pins.pin_path(RUN_RETRIEVAL).read_text("utf-8"))


@pytest.fixture(scope="module")
def process_item_flat_index():
    """run_retrieval.py's `process_item_flat_index`, defined alone (the file imports torch & co.)."""
    tree = _run_retrieval_tree()
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "process_item_flat_index")
    namespace: dict = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "run_retrieval.py", "exec"), namespace)
    return namespace["process_item_flat_index"]


def _haystack(rng: random.Random, n_sessions: int) -> tuple[list[str], list[list[dict]]]:
    """Session ids like the released files' (`answer_<hex>_<n>` for evidence, others with `_`
    inside), turns alternating user/assistant, evidence flags on user or assistant turns, and one
    `answer` session whose only flagged turn is the assistant's (a noans session)."""
    ids, sessions = [], []
    for s in range(n_sessions):
        kind = rng.choice(["answer", "sharegpt", "ultrachat", "answer"])
        sid = f"{kind}_{rng.getrandbits(24):06x}_{s}"
        turns = []
        for t in range(rng.randint(1, 6)):
            turn = {"role": "user" if t % 2 == 0 else "assistant", "content": f"turn {t} of {sid}"}
            if kind == "answer":
                turn["has_answer"] = rng.random() < 0.4
            turns.append(turn)
        ids.append(sid)
        sessions.append(turns)
    ids.append(f"answer_assistant_only_{n_sessions}")
    sessions.append(
        [{"role": "user", "content": "hi", "has_answer": False}, {"role": "assistant", "content": "the fact", "has_answer": True}]
    )
    return ids, sessions


def _authors_metrics(eval_utils, process_item_flat_index, ids, sessions, granularity, rankings):
    """What run_retrieval.py's step 1 and step 3 compute for one question."""
    corpus_ids = []
    for sid, turns in zip(ids, sessions):
        _, cur_ids, _ = process_item_flat_index([dict(t) for t in turns], granularity, sid, "2023/05/11 (Thu) 17:50")
        corpus_ids += cur_ids
    correct_docs = list(set([doc_id for doc_id in corpus_ids if "answer" in doc_id]))
    metrics = {"session": {}, "turn": {}}
    for k in [1, 3, 5, 10, 30, 50]:
        a, b, c = eval_utils.evaluate_retrieval(rankings, correct_docs, corpus_ids, k=k)
        metrics[granularity].update({f"recall_any@{k}": a, f"recall_all@{k}": b, f"ndcg_any@{k}": c})
        if granularity == "turn":
            a, b, c = eval_utils.evaluate_retrieval_turn2session(rankings, correct_docs, corpus_ids, k=k)
            metrics["session"].update({f"recall_any@{k}": a, f"recall_all@{k}": b, f"ndcg_any@{k}": c})
    return corpus_ids, metrics


@pytest.mark.parametrize("granularity", ["session", "turn"])
@pytest.mark.parametrize("seed", range(12))
def test_a_questions_metrics_are_the_authors(eval_utils, process_item_flat_index, granularity, seed):
    rng = random.Random(seed)
    ids, sessions = _haystack(rng, rng.choice([1, 3, 8, 40, 70]))
    corpus = build_corpus(ids, sessions, granularity)
    ranking = list(range(len(corpus.ids)))
    rng.shuffle(ranking)
    if seed % 3 == 0:  # an oracle ranking: run_retrieval's `oracle` retriever, correct items first
        ranking = sorted(ranking, key=lambda i: "answer" not in corpus.ids[i])
    corpus_ids, expected = _authors_metrics(eval_utils, process_item_flat_index, ids, sessions, granularity, ranking)
    assert list(corpus.ids) == corpus_ids
    assert sorted(set(corpus_ids) & set(corpus.correct_docs)) == corpus.correct_docs
    assert question_metrics(corpus, ranking) == expected  # bit for bit
    assert list(expected[granularity]) == metric_names()


def test_the_ids_follow_the_noans_rule(process_item_flat_index):
    ids = ["answer_ab_1", "sharegpt_x_2", "answer_cd_3"]
    sessions = [
        [
            {"role": "user", "content": "a", "has_answer": True},
            {"role": "assistant", "content": "b", "has_answer": False},
            {"role": "user", "content": "c", "has_answer": False},
        ],
        [{"role": "user", "content": "d"}, {"role": "assistant", "content": "e"}],
        [{"role": "user", "content": "f", "has_answer": False}, {"role": "assistant", "content": "g", "has_answer": True}],
    ]
    assert build_corpus(ids, sessions, "session").ids == ("answer_ab_1", "sharegpt_x_2", "noans_cd_3")
    turns = build_corpus(ids, sessions, "turn")
    assert turns.ids == ("answer_ab_1_1", "noans_ab_1_3", "sharegpt_x_2_1", "noans_cd_3_1")
    assert turns.keys == (("answer_ab_1", 0), ("answer_ab_1", 2), ("sharegpt_x_2", 0), ("answer_cd_3", 0))
    assert turns.correct_docs == ["answer_ab_1_1"]


def test_eval_utils_functions_match_on_edge_cases(eval_utils):
    cases = [
        ([], [], []),
        ([0], ["a"], ["a"]),
        ([2, 0, 1], ["c"], ["a", "b", "c"]),
        ([2, 0, 1], [], ["a", "b", "c"]),  # no correct document: recall_all 1, recall_any 0
        ([1, 0, 3, 2], ["s_1_1", "s_2_4"], ["s_1_1", "s_1_3", "s_2_4", "s_2_6"]),
    ]
    for rankings, correct, corpus_ids in cases:
        for k in (1, 2, 3, 10):
            assert evaluate_retrieval(rankings, correct, corpus_ids, k) == eval_utils.evaluate_retrieval(
                rankings, correct, corpus_ids, k
            )
            assert ndcg(rankings, correct, corpus_ids, k) == eval_utils.ndcg(rankings, correct, corpus_ids, k)
            assert evaluate_retrieval_turn2session(
                rankings, correct, corpus_ids, k
            ) == eval_utils.evaluate_retrieval_turn2session(rankings, correct, corpus_ids, k)
    rng = random.Random(7)
    for _ in range(50):
        rel = [rng.randint(0, 1) for _ in range(rng.randint(0, 60))]
        k = rng.choice(KS)
        assert dcg(rel, k) == eval_utils.dcg(rel, k)


def test_the_names_and_ks_are_run_retrievals():
    tree = _run_retrieval_tree()
    loops = [
        n for n in ast.walk(tree) if isinstance(n, ast.For) and ast.unparse(n.target) == "k" and isinstance(n.iter, ast.List)
    ]
    assert [tuple(ast.literal_eval(n.iter)) for n in loops] == [KS]
    source = ast.unparse(loops[0])
    for name in ("recall_any@{}", "recall_all@{}", "ndcg_any@{}"):
        assert source.count(f"'{name}'.format(k)") == 2  # the granularity's, and turn2session's
    printed = {
        n.targets[0].id: ast.literal_eval(n.value)
        for n in ast.walk(ast.parse(pins.pin_path(PRINT_RETRIEVAL_METRICS).read_text("utf-8")))
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and n.targets[0].id.endswith("_metric_names")
    }
    assert printed == {"sess_metric_names": list(PRINTED["session"]), "turn_metric_names": list(PRINTED["turn"])}


def test_our_keys_rank_the_corpus():
    ids = ["answer_ab_1", "sharegpt_x_2"]
    sessions = [
        [{"role": "user", "content": "a", "has_answer": True}, {"role": "assistant", "content": "b"}],
        [{"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}, {"role": "user", "content": "e"}],
    ]
    turns = build_corpus(ids, sessions, "turn")
    # an assistant turn is not in the authors' corpus; a repeated key keeps its first rank
    assert ranking_from_keys(turns, [("sharegpt_x_2", 2), ("answer_ab_1", 1), ["answer_ab_1", 0], ("sharegpt_x_2", 2)]) == [2, 0]
    session = build_corpus(ids, sessions, "session")
    assert ranking_from_keys(session, ["sharegpt_x_2", "sharegpt_x_2", "answer_ab_1", "other"]) == [1, 0]
    with pytest.raises(UserError, match="distinct corpus positions"):
        question_metrics(session, [1, 1])
    with pytest.raises(UserError, match="granularity 'chunk'"):
        build_corpus(ids, sessions, "chunk")  # type: ignore[arg-type]


def _rows(seed: int, n: int, granularity: str) -> tuple[list[QuestionRetrieval], list[dict]]:
    rng = random.Random(seed)
    rows, log = [], []
    for q in range(n):
        ids, sessions = _haystack(rng, rng.randint(1, 12))
        if q % 4 == 1:  # no user-side target: the evidence is in assistant turns only
            for turns in sessions:
                for t in turns:
                    t["has_answer"] = t["role"] == "assistant" and t.get("has_answer", False)
        corpus = build_corpus(ids, sessions, granularity)  # type: ignore[arg-type]
        ranking = list(range(len(corpus.ids)))
        rng.shuffle(ranking)
        qid = f"q{q:03d}" + ("_abs" if q % 7 == 3 else "")
        metrics = question_metrics(corpus, ranking)
        target = any(t.get("has_answer") for s in sessions for t in s if t["role"] == "user")
        rows.append(QuestionRetrieval(qid, metrics, target, ranked=len(ranking), corpus_size=len(corpus.ids)))
        log.append({"question_id": qid, "retrieval_results": {"metrics": metrics}})
    return rows, log


@pytest.mark.parametrize("granularity", ["session", "turn"])
def test_the_average_prints_as_print_retrieval_metrics_prints_it(tmp_path, granularity):
    rows, log = _rows(3, 45, granularity)
    path = tmp_path / "retrievallog"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in log))
    script = pins.pin_path(PRINT_RETRIEVAL_METRICS)
    proc = subprocess.run([sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    average = average_metrics(rows, "print_retrieval_metrics.py")
    assert authors_retrieval_report(average) == proc.stdout
    assert average.n == len([r for r in rows if "_abs" not in r.question_id]) and not average.skipped_no_target
    assert set(average.printed()) == ({"session"} if granularity == "session" else {"session", "turn"})


def test_run_retrievals_average_also_skips_questions_without_a_user_target():
    tree = _run_retrieval_tree()
    source = ast.unparse(tree)
    assert "if '_abs' in eval_entry['question_id']:" in source
    assert (
        "if not any(('has_answer' in turn and turn['has_answer'] for turn in [x for y in "
        "eval_entry['haystack_sessions'] for x in y if x['role'] == 'user'])):"
    ) in source
    rows, _ = _rows(5, 40, "turn")
    average = average_metrics(rows)
    kept = [r for r in rows if "_abs" not in r.question_id and r.has_user_target]
    assert average.script == "run_retrieval.py" and average.n == len(kept) > 0
    assert set(average.skipped_abstention) == {r.question_id for r in rows if "_abs" in r.question_id}
    assert set(average.skipped_no_target) == {
        r.question_id for r in rows if "_abs" not in r.question_id and not r.has_user_target
    }
    import numpy as np

    for level in ("session", "turn"):
        for name in metric_names():
            assert average.metrics[level][name] == float(np.mean([r.metrics[level][name] for r in kept]))
    with pytest.raises(UserError, match="not 'print_qa_metrics.py'"):
        average_metrics(rows, "print_qa_metrics.py")


def test_no_question_left_prints_nan(tmp_path):
    rows, log = _rows(6, 1, "turn")
    rows = [QuestionRetrieval("x_abs", rows[0].metrics, True)]
    path = tmp_path / "log"
    path.write_text(json.dumps({"question_id": "x_abs", "retrieval_results": {"metrics": rows[0].metrics}}) + "\n")
    proc = subprocess.run(
        [sys.executable, str(pins.pin_path(PRINT_RETRIEVAL_METRICS)), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert authors_retrieval_report(average_metrics(rows, "print_retrieval_metrics.py")) == proc.stdout
