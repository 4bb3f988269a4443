"""No question text and no gold answer reaches a writer or an index (DESIGN.md 4.1), on the
real data: the first two conversations of locomo10.json, built by every method that
writes or indexes, with the scripted writer (whose replies copy session text). Every
writer request, every embedder input at build time, every stored item and every string
in the files under memory/ is scanned for that conversation's questions and for gold
strings (length >= 4) that are not in its source text.

mem0g (mem0's extraction and update phases plus its graph) runs on the first three
sessions of each conversation: it makes several writer calls per message pair, and the
whole of two conversations would take about a minute of scripted HTTP; every kind of call
it makes occurs in those sessions. The other methods build both conversations whole.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

from memtest import cfg_for, open_method, writer_responder

from memorybench.testing.scripted_server import ScriptedOpenAIServer

METHODS: dict[str, tuple[dict[str, Any], int | None]] = {  # memory overrides, sessions kept (None: all)
    "session_summaries": ({"source": "writer"}, None),
    "graph": ({}, None),
    "openai_memory": ({}, None),
    "mem0g": ({}, 3),
    "raw_chunks": ({}, None),
    "rag": ({}, None),
}


def needles(conversation, questions) -> set[str]:
    """Gold strings and question texts of the run that are not in this conversation's text."""
    text = conversation.text_blob().lower()
    strings = {g.strip().lower() for q in questions for g in q.gold_strings()}
    strings |= {q.question.strip().lower() for q in questions}
    return {s for s in strings if len(s) >= 4 and s not in text}


def strings_of(value: Any) -> Iterator[str]:
    """Every string in a JSON value, but numbers (latencies) and hex digests (`*sha256`,
    `response_id`): a gold "2022" also occurs in those, and no model saw them."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if not (k.endswith("sha256") or k == "response_id"):
                yield from strings_of(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_of(v)


def file_texts(path) -> Iterator[tuple[str | None, str]]:
    """(sample_id or None, text) of a memory file's contents."""
    raw = path.read_text("utf-8")
    if path.suffix == ".jsonl":
        for line in raw.splitlines():
            row = json.loads(line)
            yield row.get("sample_id"), "\n".join(strings_of(row))
    elif path.suffix == ".json":
        row = json.loads(raw)
        yield row.get("sample_id"), "\n".join(strings_of(row))
    else:
        yield next((part for part in path.parts if part.startswith("conv-")), None), raw


def test_no_question_or_gold_reaches_a_writer_or_an_index(tmp_path, conversations):
    pair = conversations[:2]
    questions = [q for c in pair for q in c.questions]
    targets = {c.sample_id: needles(c, questions) for c in pair}
    assert min(len(t) for t in targets.values()) > 200  # the scan has teeth
    found: list[tuple[str, str, str, str]] = []
    checked = {"writer requests": 0, "embedder inputs": 0, "items": 0, "memory files": 0}

    def scan(method: str, sample_id: str, where: str, text: str) -> None:
        low = text.lower()
        found.extend((method, sample_id, where, t) for t in targets[sample_id] if t in low)

    with ScriptedOpenAIServer(responder=writer_responder) as writer:
        for name, (values, sessions) in METHODS.items():
            method, ctx = open_method(cfg_for(name, writer.base_url, **values), tmp_path / name)
            inputs: list[str] = []
            if ctx.embedder is not None:  # record what the index embeds at build time
                embed = ctx.embedder.embed
                ctx.embedder.embed = lambda texts, embed=embed, inputs=inputs: (inputs.extend(texts), embed(texts))[1]
            for conv in pair:
                if sessions is not None:
                    conv = dataclasses.replace(conv, sessions=conv.sessions[:sessions])
                start, inputs_start = len(writer.requests), len(inputs)
                built = method.build(conv, ctx)
                sent = ["\n".join(m["content"] for m in body["messages"]) for body in writer.requests[start:]]
                assert bool(sent) == (name not in ("raw_chunks", "rag")), name
                items = [i.text for i in built.items] + ([built.text] if built.text else [])
                for where, texts in (("writer request", sent), ("embedder input", inputs[inputs_start:]), ("item", items)):
                    for text in texts:
                        scan(name, conv.sample_id, where, text)
                checked["writer requests"] += len(sent)
                checked["embedder inputs"] += len(inputs) - inputs_start
                checked["items"] += len(items)
            ctx.close()
            ctx.pack.close()
            for path in sorted(p for p in (tmp_path / name / "memory").rglob("*") if p.is_file()):
                checked["memory files"] += 1
                for sample_id, text in file_texts(path):
                    assert sample_id in targets, (path, sample_id)
                    scan(name, sample_id, str(path.relative_to(tmp_path)), text)
    assert not found, found[:5]
    assert checked["writer requests"] > 300 and checked["embedder inputs"] > 300 and checked["memory files"] > 15, checked
