"""`budget.top_k` in the wrapper: the method is asked for that many, the reader gets at most
that many (best first, then the token cap), and each retrieval row says what the system
returned (`memory_retrieval.v3`)."""

from __future__ import annotations

from memtest import cfg_for, conversation, jrows, open_method

from memorybench.data.records import AskedQuestion
from memorybench.memory._managed import budgeted_config
from memorybench.memory._tokens import count_tokens

SESSIONS = [
    [("Ana", f"I went to pottery class number {i} with the teacher from Lisbon."), ("Ben", f"My dog Biscuit ran {i} miles.")]
    for i in range(6)
]


def _asked(n: int = 0) -> AskedQuestion:
    return AskedQuestion(f"t-1-q-{n}", "t-1", 4, "Where is the pottery teacher from?")


def test_the_method_is_asked_for_the_budget_and_the_row_says_what_it_returned(tmp_path):
    cfg = cfg_for("raw_chunks", chunk_tokens=20, chunk_overlap=0, top_k=8)
    cfg.budget.top_k = 3
    method, ctx = open_method(cfg, tmp_path / "pack")
    assert method.inner.top_k == 3 and method.top_k == 3 and cfg.memory.top_k == 8  # asked on a copy
    built = method.build(conversation(SESSIONS), ctx)
    assert len(built.items) > 3
    method.for_question(built, _asked(), ctx)
    (row,) = jrows(tmp_path / "pack/memory/raw_chunks/retrievals.jsonl")
    assert row["schema"] == "memory_retrieval.v3" and row["top_k"] == 3 and row["memory_items"] == len(built.items)
    assert row["returned"] == len(row["hits"]) + row["dropped_by_budget"] and len(row["hits"]) <= 3


def test_a_system_that_returns_more_is_cut_to_the_budget_best_first(tmp_path):
    cfg = cfg_for("rag", chunk_tokens=20, chunk_overlap=0, top_k=8)
    method, ctx = open_method(cfg, tmp_path / "pack")
    method.top_k = 2  # the wrapper's budget, while the method itself still returns its own 8
    built = method.build(conversation(SESSIONS), ctx)
    text = method.for_question(built, _asked(), ctx)
    (row,) = jrows(tmp_path / "pack/memory/rag/retrievals.jsonl")
    assert row["returned"] == 8 and row["top_k"] == 2 and row["dropped_by_budget"] == 6
    kept = [h["item_id"] for h in row["hits"]]
    full = method.inner.retrieve(built, _asked(1), ctx)
    assert kept == [h["item_id"] for h in full.hits[:2]]  # the best two, in the method's order
    assert text == full.render([0, 1])
    # then the token cap: fewer still
    method.max_memory_tokens = count_tokens(full.texts[0])  # the best hit alone fits
    method.for_question(built, _asked(2), ctx)
    capped = jrows(tmp_path / "pack/memory/rag/retrievals.jsonl")[-1]
    assert capped["returned"] == 8 and len(capped["hits"]) == 1 and capped["dropped_by_budget"] == 7


def test_without_a_budget_the_config_is_the_methods_own(tmp_path):
    cfg = cfg_for("rag", chunk_tokens=20, chunk_overlap=0, top_k=4)
    assert budgeted_config(cfg) is cfg
    method, ctx = open_method(cfg, tmp_path / "pack")
    built = method.build(conversation(SESSIONS), ctx)
    method.for_question(built, _asked(), ctx)
    (row,) = jrows(tmp_path / "pack/memory/rag/retrievals.jsonl")
    assert row["top_k"] is None and row["returned"] == 4 == len(row["hits"])
