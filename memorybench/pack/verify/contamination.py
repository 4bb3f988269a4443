"""No gold string reaches a model: reader prompts, memory files, writer input and agent workspaces.

A gold string (length >= 4 after strip, case-insensitive) that is not also in that
conversation's source text (dates, turns, captions; plus the released summaries when the
memory method shows them, as session_summaries does; plus the run's own prompt files) must
not appear in a reader prompt (minus the question's own text), a memory file (dumps, index
items, writer input) or an agent workspace file. A model's reply stored in a memory journal (a writer call's
`response`) is output, not input, and is not scanned; memory made from the writer's own
replies may hold a gold the writer wrote itself. JSON is scanned by its string values only
(keys are field names, numbers are counts). The reader prompts are scanned by the trace
check (`memorybench.pack.verify.traces`), which rebuilds them, through `scan_segments`.
"""

from __future__ import annotations

import re
from typing import Any

from memorybench.hashing import sha256_bytes
from memorybench.pack.verify.context import AGENT_NOTES, GOLD_SCANNED, WRITER_CALLS, Context
from memorybench.pack.verify.findings import Findings
from memorybench.pack.verify.needles import Needles, joint_windows, json_strings, model_input
from memorybench.registry import MEMORY
from memorybench.records import load_json

__all__ = ["check_files_for_gold", "check_needles", "scan_segments"]


def check_needles(ctx: Context, out: Findings) -> None:
    """The gold strings of the dataset that are needles per conversation, and the writer's own replies."""
    if ctx.conversations is None:
        return
    instructions = "\n".join(ctx.templates[k] for k in sorted(ctx.templates))
    method = MEMORY.get(ctx.memory_name) if ctx.memory_name in MEMORY else None
    # a method that hands the reader the file's released summaries makes them source text too
    with_summaries = bool(getattr(method, "shows_released_summaries", False))
    ctx.needles = Needles(ctx.conversations, with_summaries=with_summaries, instructions=instructions)
    ctx.writer_output = _writer_output(ctx, ctx.needles)


def _writer_output(ctx: Context, needles: Needles) -> dict[str | None, list[tuple[int, str]]]:
    """Per sample id, (line number, lowercased reply) of its writer calls (memory/writer/calls.jsonl)."""
    path = ctx.root / WRITER_CALLS
    out: dict[str | None, list[tuple[int, str]]] = {}
    if not path.is_file():
        return {}
    for number, line in enumerate(path.read_text("utf-8", errors="replace").split("\n"), start=1):
        try:
            row = load_json(line)
            text = row["response"]["text"]
        except (ValueError, KeyError, TypeError):
            continue  # a torn or malformed row is the schema check's finding
        if isinstance(text, str):
            out.setdefault(needles.sample(row.get("sample_id")), []).append((number, text.lower()))
    return out


def _written_by_the_writer(ctx: Context, sample: str | None, needle: str, before_line: int | None = None) -> bool:
    """Whether a reply of the writer for `sample` (before call line `before_line`, if given) holds `needle`."""
    return any(
        needle in text for number, text in ctx.writer_output.get(sample, ()) if before_line is None or number < before_line
    )


def _gold_finding(
    ctx: Context, out: Findings, sample: str | None, needle: str, relpath: str, line: int | None, what: str
) -> None:
    assert ctx.needles is not None
    if relpath != WRITER_CALLS and _written_by_the_writer(ctx, sample, needle):
        # The writer model wrote this string itself (a year, a name): memory made from its
        # replies may hold it by chance. Its inputs are scanned in calls.jsonl, where a gold
        # that reached the writer before the writer ever wrote it is still a finding.
        return
    if relpath.startswith(AGENT_NOTES) and _asked_by_then(relpath, ctx.needles.gold_of[needle]):
        # notes after question N may hold the agent's own answers to questions 0..N of the
        # conversation; a gold of a later question (or any gold after ingest) is a leak
        return
    source = f"{sample}'s source text" if sample else "any conversation's source text"
    out.grouped(
        "gold.leak",
        relpath,
        line,
        f"gold answer {needle!r} of {ctx.needles.gold_of[needle]} appears in {what}; it is not in {source}",
        ("gold", needle),
    )


def _asked_by_then(relpath: str, gold_question: str) -> bool:
    """Whether the question a gold belongs to was asked by the time the notes snapshot at
    `relpath` (`agent/notes/<question id>.md`) was taken; never for an ingest snapshot."""
    stem = relpath.rsplit("/", 1)[-1].removesuffix(".md")
    snapshot, gold = re.match(r"^(.+)-q-(\d+)$", stem), re.match(r"^(.+)-q-(\d+)$", gold_question)
    return bool(snapshot and gold and snapshot.group(1) == gold.group(1) and int(gold.group(2)) <= int(snapshot.group(2)))


def scan_segments(
    ctx: Context, out: Findings, sample: str | None, segments: list[tuple[str, Any]], relpath: str, line: int | None, what: str
) -> None:
    """Scan a text made of lowercased segments (each cached by its key) and the windows across their joints."""
    assert ctx.needles is not None
    hits: set[str] = set()
    for text, key in segments:
        hits.update(ctx.needles.scan(sample, text, key))
    texts = [t for t, _ in segments]
    for window in joint_windows(texts, ctx.needles.maxlen - 1):
        hits.update(ctx.needles.scan(sample, window))
    for needle in sorted(hits):
        _gold_finding(ctx, out, sample, needle, relpath, line, what)


def check_files_for_gold(ctx: Context, out: Findings) -> None:
    """Memory files (dumps, index items, writer input), writer/ and agent workspace files.

    JSON is scanned by its string values only (a gold with a quote is escaped in the raw
    line; keys and numbers are the record's shape, not text a model read), each JSONL row
    against the needles of its own `sample_id`. A row's `response` (a model's reply, e.g. a
    writer call's) is an output, not an input, and is left out: what a model wrote reaches
    a prompt through the memory files anyway.
    """
    if ctx.needles is None:
        return
    for path, relpath in ctx.rel.items():
        if not relpath.startswith(GOLD_SCANNED) or path.name.endswith((".part", ".log")):
            continue  # a local server's log holds load and timing lines (digits), never a prompt
        text = _text_of(path.read_bytes())
        sample, question = _owner_of(ctx, relpath)
        if relpath.endswith(".jsonl"):
            _gold_in_jsonl(ctx, out, relpath, text, sample)
            continue
        key: Any = ("ref", sha256_bytes(text.encode("utf-8")))  # a dump is also a reader ref: scanned once
        if relpath.endswith(".json"):
            try:
                text, key = "\n".join(json_strings(load_json(text))), None
            except ValueError:
                pass
        low = _without_question(ctx, text.lower(), question)
        if question is not None:
            key = None
        for needle in ctx.needles.scan(sample, low, key):
            at = low.find(needle)
            line = low.count("\n", 0, at) + 1 if not relpath.endswith(".json") else None
            _gold_finding(ctx, out, sample, needle, relpath, line, relpath)


#: a run of bytes with no control character but tab and newline: text inside a binary file
_TEXT_RUN = re.compile(rb"[^\x00-\x08\x0b-\x1f\x7f]{4,}")


def _text_of(data: bytes) -> str:
    """A file's text to scan. A binary file (a wrapped library's database: Kùzu's, Chroma's
    SQLite, mostly zero pages) is reduced to its runs of text, one per line: every gold of
    at least 4 characters stored in it as text lies inside one run, and the scan reads a
    fraction of the bytes (a 36 MB Kùzu file is 89% zeros)."""
    if b"\x00" not in data:
        return data.decode("utf-8", errors="replace")
    return b"\n".join(_TEXT_RUN.findall(data)).decode("utf-8", errors="replace")


def _without_question(ctx: Context, low: str, question_id: str | None) -> str:
    """The text with the question's own text removed (it may name another question's gold)."""
    question = ctx.question_text.get(question_id) if question_id else None
    return low.replace(question.lower(), "\x00") if question else low


def _owner_of(ctx: Context, relpath: str) -> tuple[str | None, str | None]:
    """(sample id, question id) a memory or workspace file belongs to, from the manifest or its path."""
    assert ctx.needles is not None
    if relpath in ctx.dump_samples:
        return ctx.needles.sample(ctx.dump_samples[relpath]), None
    sample = question = None
    for part in relpath.split("/"):
        stem = part.rsplit(".", 1)[0] if "." in part else part
        match = re.match(r"^(.+)-q-\d+$", stem)
        if match and match.group(1) in ctx.needles.by_sample:
            sample, question = match.group(1), stem
        elif stem in ctx.needles.by_sample:
            sample = stem
    return ctx.needles.sample(sample), question


def _gold_in_jsonl(ctx: Context, out: Findings, relpath: str, text: str, file_sample: str | None) -> None:
    """JSONL rows, grouped by their `sample_id` (else the file's), one scan per group."""
    assert ctx.needles is not None
    groups: dict[str | None, list[tuple[int, str]]] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = load_json(line)
        except ValueError:
            row = line
        sample = file_sample
        if isinstance(row, dict):
            sample = ctx.needles.sample(row.get("sample_id")) or file_sample
            qid = row.get("question_id") if isinstance(row.get("question_id"), str) else None
            row = {k: v for k, v in row.items() if k != "response"}
            if isinstance(row.get("request"), dict):
                row["request"] = model_input(row["request"])
        else:
            qid = None
        low = _without_question(ctx, "\n".join(json_strings(row)).lower(), qid)
        groups.setdefault(sample, []).append((number, low))
    for sample, lines in groups.items():
        hits = ctx.needles.scan(sample, "\n".join(low for _, low in lines), ("jsonl", relpath, sample))
        for needle in hits:
            number = next((n for n, low in lines if needle in low), None)
            if relpath == WRITER_CALLS and _written_by_the_writer(ctx, sample, needle, before_line=number):
                continue  # a later task's input carries an earlier reply (mem0's facts, saved lists)
            _gold_finding(ctx, out, sample, needle, relpath, number, relpath)
