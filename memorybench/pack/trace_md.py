"""TRACE.md: the first answered question's walk (`memorybench.pack.walk`) as Markdown.

Written from the pack's own files, with the real paths and line numbers, so that a
reader can audit a number without knowing the code. `memorybench show PACK QUESTION_ID`
prints the same walk for any question, with the texts in full. The walk of a reader
names its prompt template and trace; an agent's names its task, its process, its
trajectory and notes. The walk shows no gold and no evidence; a last section, marked
scorer-side (after the answer, never seen by a model), gives the gold, the rule of its kind and
the arithmetic of the lexical score, worked out by the module the lexical scorer names
(`Scorer.worked`). A benchmark whose score is its judge's is written in its own terms: the
question's kind and subsets, and scorer-side the rule its lexical diagnostic was computed by
(`Benchmark.lexical_rules`) with its arithmetic, beside where the benchmark's own score comes
from (its judge, `memorybench autorater`).
Numbers have 4 decimals; no Python reprs of dicts (`show` adds the evidence).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from memorybench.benchmark import Benchmark, benchmark_named, benchmark_of_pack, imported
from memorybench.errors import printable
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import RunPack
from memorybench.pack.walk import AgentProcess, PackWalker, Walk

__all__ = ["render_trace_md", "write_trace_md"]

EMPTY = "# Trace\n\nNo question was answered in this pack.\n"
#: text quoted inline as it is: letters, digits and punctuation no Markdown or HTML reader acts on
_PLAIN = re.compile(r"[\w .,;:!?'\"()/+-]{0,200}")


def quoted(text: str | None) -> str:
    """Text from outside (a model's reply, a dataset's question) as TRACE.md quotes it: inline as
    its repr when it is plain words; else in a fenced block (a fence longer than any run of
    backticks inside), so `</script>`, links or Markdown in a reply are shown, never rendered."""
    if text is None or _PLAIN.fullmatch(text):
        return repr(text)
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"(quoted below)\n\n{fence}text\n{printable(text)}\n{fence}\n"


def _num(value: Any) -> str:
    """A number as TRACE.md prints it: a float with 4 decimals, never 16 digits; None is "unknown"."""
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _usage(usage: dict[str, Any] | None) -> str:
    """Token counts in words ("prompt_tokens 125, completion_tokens 2"), not a dict's repr."""
    return ", ".join(f"{k} {_num(v)}" for k, v in usage.items()) if usage else "none recorded"


def _lines_span(lines: list[int | None]) -> str:
    known = [n for n in lines if n is not None]
    if not known:
        return "no lines"
    return f"line {known[0]}" if len(known) == 1 else f"lines {known[0]}-{known[-1]}"


def _memory(walk: Walk) -> list[str]:
    m = walk.memory
    manifest_line = m.manifest.line if m.manifest else None
    lines = [
        "## 2. Memory",
        f"- Method `{m.method}`: `{layout.MEMORY_MANIFEST}` line {manifest_line}; "
        f"text `{m.memory_path or 'question-dependent (blobs/)'}`, sha256 `{m.memory_sha256}`.",
        f"- Which turns or sessions each item came from: `{layout.LINEAGE}` (rows with sample_id `{walk.sample_id}`).",
    ]
    if m.retrieval is not None:
        r = m.retrieval
        ids = ", ".join(f"`{h.get('item_id')}`" for h in r.hits)
        cut = f"; {r.dropped_by_budget} hit(s) left out by the memory budget" if r.dropped_by_budget else ""
        lines.append(
            f"- Retrieved for this question: {r.where}: {len(r.hits)} item(s) ({ids}){cut}; "
            f"their text is the memory above (`{m.text_path}`)."
        )
    if m.writer_calls:
        models = sorted({c.model_requested for c in m.writer_calls if c.model_requested})
        lines.append(
            f"- Written by a writer model ({', '.join(f'`{x}`' for x in models)}): `{layout.WRITER_CALLS}` "
            f"{_lines_span([c.where.line for c in m.writer_calls])} ({len(m.writer_calls)} call(s) for `{walk.sample_id}`)."
        )
    if m.writer_failures:
        lines.append(f"- {len(m.writer_failures)} writer task(s) given up for this conversation: `{layout.WRITER_FAILURES}`.")
    return lines + [""]


def _reader(walk: Walk) -> list[str]:
    p = walk.prompt
    assert p is not None
    call = walk.calls[0]
    refs = [v["ref"] for v in p.slots.values() if v.get("ref")]
    return [
        "## 3. Prompt",
        f"- Template `prompts/{p.template}` (sha256 `{p.template_sha256}`), system message `{layout.SYSTEM_PROMPT}`.",
        f"- The user message is the template with the slot values of `{layout.READER_TRACES}` line {p.where.line} "
        f"(`request.slots`): the question inline, the memory by `ref` ({', '.join(f'`{r[:12]}…`' for r in refs)}), "
        f"which `{layout.REFERENCE_PIN}` maps to a file.",
        f"- sha256 of the rebuilt user message = `reader_payload_sha256` = `{p.recorded_sha256}`.",
        "",
        "## 4. Model call",
        f"- `{layout.READER_TRACES}` line {call.where.line}: model requested `{call.model_requested}`, answered "
        f"`{call.model_answered}`; {len(call.attempts)} attempt(s); usage {_usage(call.usage)}; "
        f"latency {_num(call.latency_s)} s; cache hit {_num(call.cache_hit)}; cost (USD) {_num(call.cost_usd)}.",
        f"- Raw reply: {quoted(walk.reply)} -> stored prediction {quoted(walk.prediction)} (whitespace stripped).",
        "",
    ]


def _process(process: AgentProcess) -> list[str]:
    lines = [
        f"- {process.where}: codex {process.codex_version}, mode `{process.mode}`, sandbox `{process.sandbox}`, "
        f"persist {'on' if process.persist else 'off'}; status `{process.status}`; {process.turns} turn(s); "
        f"usage {_usage(process.usage)}; wall {_num(process.wall_s)} s (an agent's calls carry no price per question).",
    ]
    if process.actions:
        lines.append(
            f"- Trajectory: `{layout.AGENT_TRAJECTORY}` {_lines_span([a.where.line for a in process.actions])} "
            f"({len(process.actions)} step(s)); raw events from {process.events}."
        )
        for a in process.actions:
            detail = f"`{a.command}`" if a.command else "(no command)"
            reads = f"; reads {', '.join(f'`{r}`' for r in a.reads)}" if a.reads else ""
            writes = f"; writes {', '.join(f'`{w}`' for w in a.writes)}" if a.writes else ""
            seen = f"; printed turns {', '.join(a.dia_ids)}" if a.dia_ids else ""
            lines.append(f"  - step {a.step} `{a.kind}`: {detail}{reads}{writes}{seen}")
    else:
        lines.append("- Trajectory: no step (the agent answered without a tool call).")
    if process.notes:
        n = process.notes
        lines.append(
            f"- Notes after this question: `{n.get('path')}` ({n.get('bytes')} bytes, "
            f"{'changed' if n.get('changed') else 'unchanged'}), {process.notes_where}."
        )
    if process.recall_where is not None:
        lines.append(f"- Which evidence turns the steps printed (computed after the run): {process.recall_where}.")
    if process.warnings:
        lines.append(f"- {len(process.warnings)} warning(s) from the CLI (not failures), in {process.where}.")
    return lines


def _agent(walk: Walk) -> list[str]:
    p = walk.prompt
    lines = ["## 3. Task"]
    if p is None:
        lines += ["- No agent trace for this question.", ""]
    else:
        refs = [v["ref"] for v in p.slots.values() if v.get("ref")]
        memory = f", the memory by `ref` ({', '.join(f'`{r[:12]}…`' for r in refs)})" if refs else ""
        footer = f", then the footer `prompts/{p.footer}`" if p.footer else ""
        check = "matches" if p.matches else "does NOT match (see `memorybench verify`)"
        lines += [
            f"- Template `prompts/{p.template}` (sha256 `{p.template_sha256}`); no system message of ours (the CLI's own).",
            f"- The task sent on stdin is the template with the slot values of {p.where} (`task.slots`): "
            f"the question inline{memory}{footer}.",
            f"- sha256 of the rebuilt task = `{p.recorded_as}` = `{p.recorded_sha256}` ({check}).",
            "",
        ]
    lines.append("## 4. Agent process")
    for process in walk.agent:
        lines += _process(process)
    lines += [f"- Raw reply: {quoted(walk.reply)} -> stored prediction {quoted(walk.prediction)} (whitespace stripped).", ""]
    return lines


def render_trace_md(walk: Walk, data_path: str | Path | None = None, bench: Benchmark | None = None) -> str:
    """The walk of one question as TRACE.md's Markdown (no gold, no evidence), then the scorer side
    (`_scorer_side`; another benchmark's pack, `bench`: `_diagnostic_side`)."""
    from memorybench.score.scorers import LEXICAL

    bench = bench or benchmark_named(None)
    qid, sample_id = walk.question_id, walk.sample_id
    path = data_path if data_path is not None else walk.source.data_path
    if bench.own_lexical_rules:
        source = [
            f'- File: `{path}` (sha256 `{walk.source.data_sha256}`), conversation `sample_id == "{sample_id}"`, '
            f"`qa[{walk.qa_index}]` (question id `{qid}` = `{{sample_id}}-q-{{qa_index}}`).",
            f"- Question: {quoted(walk.question)}; category {walk.category}.",
        ]
        scores = [
            f"- {bench.lexical_figure} {_num(walk.scores[LEXICAL])} (category {walk.category} rule, worked out in section 6), "
            f"exact match {_num(walk.scores['exact_match'])}, token F1 {_num(walk.scores['token_f1'])} (ours).",
            f"- Aggregated into `{layout.METRICS}`: `scores.{LEXICAL}.overall`, its subsets and "
            f'`scores.{LEXICAL}.by_kind["{walk.category}"]`.',
        ]
    else:
        from memorybench.score.rows import diagnostic_name  # the scorers import nltk: only when a trace is written

        task = f" `scores.{LEXICAL}.task_average`," if bench.task_averaged else ""
        source = [
            f"- File: `{path}` (sha256 `{walk.source.data_sha256}`), the {bench.name} question `{qid}` "
            f"(sample `{sample_id}`, `qa[{walk.qa_index}]`).",
            f"- Question: {quoted(walk.question)}; {_kind(walk, bench)}.",
        ]
        scores = [
            f"- Lexical diagnostics, not {bench.name}'s score (its judge's accuracy, section 6): "
            f"{diagnostic_name(LEXICAL)} {_num(walk.scores[LEXICAL])} (column `{LEXICAL}`; its rule is worked out "
            f"in section 6), exact match {_num(walk.scores['exact_match'])}, token F1 {_num(walk.scores['token_f1'])}.",
            f"- Aggregated into `{layout.METRICS}` as diagnostics: `scores.{LEXICAL}.overall`,{task} "
            f'`scores.{LEXICAL}.by_kind["{walk.category}"]` (each labelled a lexical diagnostic there).',
        ]
    lines = [
        f"# Trace of one answer: {qid}",
        "",
        f"Run `{walk.run_id}` (config sha256 `{walk.config_sha256}`). Every path below is relative to this pack.",
        "",
        "## 1. Source row",
        *source,
        "- Gold and evidence stay in the source row; they reach no prompt (see `memorybench verify`).",
        "",
        *_memory(walk),
        *(
            _agent(walk)
            if walk.agent or (walk.prompt is not None and walk.prompt.recorded_as != "reader_payload_sha256")
            else _reader(walk)
            if walk.prompt is not None
            else _no_trace(walk)
        ),
        "## 5. Scores",
        f"- `{walk.prediction_at.path}` line {walk.prediction_at.line}; `{walk.csv_at.path}` line {walk.csv_at.line}.",
        *scores,
        "",
        *(_scorer_side(walk) if bench.own_lexical_rules else _diagnostic_side(walk, bench)),
    ]
    return "\n".join(lines)


def _kind(walk: Walk, bench: Benchmark) -> str:
    """`type 5 (temporal-reasoning), abstention: no ('_abs' not in its id)`: the question's kind
    and each subset of the benchmark (`Benchmark.id_marks`), as its own scorer names them."""
    held = bench.marks(walk.question_id)
    marks = "".join(
        f", {name}: {'yes' if name in held else 'no'} ({mark!r} {'in' if name in held else 'not in'} its id)"
        for name, mark in bench.id_marks.items()
    )
    return f"{bench.kind_word} {walk.category} ({walk.source.category_name}){marks}"


def _worked() -> Any:
    """The module that works the lexical scorer's arithmetic out (`Scorer.worked`)."""
    from memorybench.score.scorers import lexical_scorer  # the scorers import nltk: only when a trace is written

    return imported(lexical_scorer().worked)


def _scorer_side(walk: Walk) -> list[str]:
    """Section 6, scorer-side: the gold, the category's rule and the arithmetic of the lexical
    score, all joined after the answer was stored (no prompt held any of it)."""
    gold = walk.source.gold
    lines = [
        "## 6. Scorer side (after the answer, never seen by a model)",
        "- Everything in this section was joined after the answer was stored; no prompt held it.",
        f"- Gold: {quoted(gold) if isinstance(gold, str) else _num(gold)} (`{walk.prediction_at.path}` line "
        f"{walk.prediction_at.line}, field `gold`, copied from the source row).",
    ]
    worked, computed = _worked().own_rule(walk.prediction, gold, walk.category, walk.source.category_name)
    return lines + worked + ([] if computed is None else [_against_stored(walk, computed)]) + [""]


def _against_stored(walk: Walk, computed: float, shown_as: str | None = None) -> str:
    """The line that checks the arithmetic above against the stored lexical score (`shown_as`:
    the name another benchmark's pack shows it by)."""
    from memorybench.score.scorers import LEXICAL

    recorded = walk.scores.get(LEXICAL)
    if recorded is not None and abs(recorded - computed) > 1e-9:
        return f"- This differs from the stored score {_num(recorded)}: see `memorybench verify`."
    shown = f" (shown as `{shown_as}`)" if shown_as else ""
    return f"- The same as `{LEXICAL}`{shown} in `{walk.csv_at.path}` line {walk.csv_at.line}."


def _diagnostic_side(walk: Walk, bench: Benchmark) -> list[str]:
    """Section 6 of another benchmark's pack: the gold, its kind and subsets, where its score comes
    from (its judge), and the rule its lexical diagnostic was computed by (its record's
    `lexical_rules`, else the single-hop rule for every kind) with the arithmetic."""
    from memorybench.score.rows import diagnostic_name
    from memorybench.score.scorers import LEXICAL

    gold, name = walk.source.gold, diagnostic_name(LEXICAL)
    whose = (
        f"every {bench.name} question, whatever its {bench.kind_word},"
        if bench.lexical_rules is None
        else f"a {bench.name} question of {bench.kind_word} {walk.category}"
    )
    applied, worked, computed = _worked().diagnostic_rule(
        walk.prediction, gold, bench.lexical_rule(walk.category), whose=whose, kind_word=bench.kind_word, name=name
    )
    lines = [
        "## 6. Scorer side (after the answer, never seen by a model)",
        "- Everything in this section was joined after the answer was stored; no prompt held it.",
        f"- Gold: {quoted(gold) if isinstance(gold, str) else _num(gold)} (`{walk.prediction_at.path}` line "
        f"{walk.prediction_at.line}, field `gold`, copied from the source row).",
        f"- Kind: {_kind(walk, bench)}.",
        f"- {bench.name}'s score is its judge's accuracy ({bench.scored_by}), not this section's number: "
        f"`memorybench autorater PACK judge={bench.name}`, then `memorybench show PACK {walk.question_id}` for its verdicts.",
        f"- Rule applied (a lexical diagnostic, `{name}`, not {bench.name}'s score): {applied}",
    ]
    return lines + worked + ([] if computed is None else [_against_stored(walk, computed, name)]) + [""]


def _no_trace(walk: Walk) -> list[str]:
    """An answerer that keeps no trace (an imported pack): only its stored answer."""
    return [
        "## 3. Prompt",
        f"- No trace of a prompt for this question (answerer `{walk.answerer}`).",
        "",
        "## 4. Model call",
        f"- Stored prediction {quoted(walk.prediction)}.",
        "",
    ]


def write_trace_md(pack: RunPack, data_path: Path) -> None:
    walker = PackWalker(PackReader.open(pack.root), join_dataset=False)
    questions = walker.question_ids()
    if not questions:
        pack.write_text(layout.TRACE_MD, EMPTY)
        return
    bench = benchmark_of_pack(walker.meta)
    pack.write_text(layout.TRACE_MD, render_trace_md(walker.walk(questions[0]), data_path, bench))
