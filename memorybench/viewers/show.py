"""`memorybench show PACK QUESTION_ID`: one question's walk through a pack, as text.

    memorybench show outputs/packs/default/runs/<run_id> conv-26-q-0 [--brief] [--json]

Prints, in order: the source row (question, gold, evidence turns: joined after
answering), the memory and its lineage (retrieval hits, writer calls), the prompt as
sent (rebuilt from its template and REFERENCE_PIN.json, its sha256 checked), every model
call with its attempts, usage and cost, the answer, every score, every judge's verdicts,
an agent's trajectory, reads, notes and usage, and the question's blame
(`memorybench.compare.blame`). Another benchmark's pack (LongMemEval) is shown in its own
terms: its question kind and subsets (type, abstention), its lexical scores labelled the
diagnostics they are (`memorybench.score.rows.PLAIN_RULE`: never LoCoMo F1), and beside each
judge's verdicts the pack's figures by that judge (LongMemEval: accuracy per question type,
task-averaged, overall, abstention, from its autorater_metrics.json). A question with a known gold error (the audit's
errors.json, `memorybench.benchmarks.locomo.gold_audit`) is flagged under its source row, with the
corrected answer or evidence and the audit's reasoning. `--brief` prints a few lines only (question,
answer, gold, scores, blame class; no lineage, no prompt); `--json` prints the walk and the blame as one JSON object. No model call; nothing is
written.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from memorybench.benchmark import Benchmark, benchmark_named, benchmark_of_pack
from memorybench.benchmark import imported
from memorybench.errors import OneLineParser, printable
from memorybench.pack import layout
from memorybench.pack.walk import AgentProcess, ModelCall, PackWalker, SourceRow, Walk
from memorybench.compare.blame import Blame, question_blame

__all__ = ["render_brief", "render_walk", "show", "show_main"]

#: `--brief`: lines kept at each end of a long text
BRIEF_LINES = 12


def _text(text: str | None, brief: bool, indent: str = "    | ") -> list[str]:
    if text is None:
        return [f"{indent}(not in the pack)"]
    lines = text.split("\n")
    if brief and len(lines) > 2 * BRIEF_LINES + 1:
        lines = [*lines[:BRIEF_LINES], f"... {len(lines) - 2 * BRIEF_LINES} more lines ...", *lines[-BRIEF_LINES:]]
    return [indent + line for line in lines]


def _money(value: float | None) -> str:
    return "unknown (no price)" if value is None else f"${value:.6f}"


def _call(call: ModelCall) -> list[str]:
    usage = ", ".join(f"{k} {v}" for k, v in call.usage.items()) or "none recorded"
    cache = "" if call.cache_hit is None else f"; cache hit {'yes' if call.cache_hit else 'no'}"
    lines = [
        f"  {call.role} ({call.purpose}) at {call.where.path} line {call.where.line}: requested {call.model_requested}, "
        f"answered {call.model_answered}; latency {call.latency_s} s; usage {usage}; cost {_money(call.cost_usd)}{cache}"
    ]
    for a in call.attempts:
        wait = f", waited {a.wait_s} s{' (Retry-After)' if a.retry_after else ''}" if a.wait_s is not None else ""
        error = f", error {a.error}" if a.error else ""
        lines.append(f"    attempt {a.n}: HTTP {a.status} in {a.latency_s} s{error}{wait}")
    if call.error:
        lines.append(f"    error: {call.error}")
    if call.reply is not None:
        lines.append(f"    reply: {call.reply!r}")
    return lines


def _agent(process: AgentProcess, brief: bool) -> list[str]:
    usage = ", ".join(f"{k} {v}" for k, v in process.usage.items()) or "none recorded"
    lines = [
        f"  codex {process.codex_version} at {process.where.path} line {process.where.line}: mode {process.mode}, "
        f"sandbox {process.sandbox}, persist {'on' if process.persist else 'off'}; status {process.status}; "
        f"{process.turns} turn(s); wall {process.wall_s} s; usage {usage}"
    ]
    for warning in process.warnings:
        lines.append(f"  warning: {warning}")
    for finding in process.findings:
        lines.append(f"  workspace finding: {finding}")
    lines.append(f"  trajectory ({len(process.actions)} step(s)); events from {process.events}:")
    for a in process.actions:
        lines.append(f"    step {a.step} [{a.kind}] {a.command or ''} (exit {a.exit_code}; {a.where.path} line {a.where.line})")
        if a.reads:
            lines.append(f"      reads: {', '.join(a.reads)}")
        if a.writes:
            lines.append(f"      writes: {', '.join(a.writes)}")
        if a.dia_ids:
            lines.append(f"      printed turns: {', '.join(a.dia_ids)}")
        if a.output:
            lines += _text(a.output.rstrip("\n"), brief, "      | ")
    lines.append(f"  files read: {', '.join(process.reads) or 'none'}")
    if process.notes:
        n = process.notes
        lines.append(
            f"  notes after this question: {n.get('path')} ({n.get('bytes')} bytes, "
            f"{'changed' if n.get('changed') else 'unchanged'}; {process.notes_where.path if process.notes_where else ''} "
            f"line {process.notes_where.line if process.notes_where else ''})"
        )
    if process.recall:
        r = process.recall
        lines.append(
            f"  evidence the steps printed (after the run): {', '.join(r.get('found') or []) or 'none'} of "
            f"{', '.join(r.get('evidence') or []) or 'none'}; recall {r.get('memory_recall')}; "
            f"first at step {r.get('hop_to_evidence')}"
        )
    return lines


def _gold_error(s: SourceRow, brief: bool) -> list[str]:
    """The audit's finding on the source row (`memorybench.benchmarks.locomo.gold_audit`): flagged, with the
    corrected answer or evidence and the reasoning; nothing when the row has none."""
    if s.gold_error_note:
        return [f"  {s.gold_error_note}"]
    e = s.gold_error
    if e is None:
        return []
    where = e.where
    if e.kind == "answer":
        out = [
            f"  KNOWN GOLD ERROR ({where}): the gold answer is wrong; the question is left out of the figures "
            "on questions without a known gold error",
            f"  corrected answer: {e.corrected_answer!r}",
        ]
    else:
        out = [
            f"  KNOWN CITATION ERROR ({where}): the gold answer stands, its evidence ids do not; "
            "evidence diagnostics use the corrected evidence"
        ]
    out.append(f"  corrected evidence: {', '.join(e.corrected_evidence) or 'none'}")
    for t in s.corrected_evidence_turns:
        out.append(
            f"    {t.dia_id} [session {t.session}, {t.date_time}] {t.rendered}"
            if t.rendered
            else f"    {t.dia_id}: no such turn in the conversation"
        )
    out += ["  the audit's reasoning:", *_text(e.reasoning, brief)]
    return out


def _fact(value: bool | None, why: str) -> str:
    """A blame fact as printed: True or False, or "unknown (why)", never None."""
    return str(value) if value is not None else f"unknown ({why})"


def _blame_facts(walk: Walk, blame: Blame, bench: Benchmark | None = None) -> tuple[str, str, str]:
    """evidence_stored, evidence_given and answer_used_evidence in words, each unknown one with why."""
    bench = bench or benchmark_named(None)
    s, m = walk.source, walk.memory
    if blame.evidence is None:
        no_evidence = f"the gold evidence is not known: {s.note or 'no dataset row for this question'}"
    elif not blame.evidence:
        no_evidence = "the source row has no evidence id"
    else:
        no_evidence = ""
    stored_why = no_evidence or "no memory manifest for this conversation"
    given_why = no_evidence or (
        "no memory manifest for this conversation"
        if m.manifest is None
        else "no retrieval row for this question"
        if m.question_dependent and m.retrieval is None
        else "the memory text given or the dataset file is not here"
    )
    used_why = (
        "category 5 has no gold answer"
        if walk.category == 5 and bench.own_lexical_rules
        else "no gold answer"
        if s.gold is None
        else "no gold stem was in what the answerer was given (or that text is not in the pack)"
    )
    stored = _fact(blame.evidence_stored, stored_why) + (
        f" (not kept: {', '.join(blame.not_stored)})" if blame.not_stored else ""
    )
    given = _fact(blame.evidence_given, given_why) + (f" (not given: {', '.join(blame.not_given)})" if blame.not_given else "")
    used = _fact(blame.answer_used_evidence, used_why) + (
        f" (gold stems given: {', '.join(blame.gold_in_prompt)}; missing from the answer: {', '.join(blame.gold_dropped) or 'none'})"
        if blame.gold_in_prompt
        else ""
    )
    return stored, given, used


def _score(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else "unknown" if value is None else str(value)


def _kind(walk: Walk, bench: Benchmark) -> str:
    """`temporal-reasoning; abstention ('_abs' in its id)`: the subsets (`Benchmark.id_marks`) after
    the kind's name; a LoCoMo question has none."""
    marks = "".join(f"; {name} ({bench.id_marks[name]!r} in its id)" for name in bench.marks(walk.question_id))
    return f"{walk.source.category_name}{marks}"


def _lexical(walk: Walk, bench: Benchmark, number: Any = repr) -> str:
    """Another benchmark's lexical scores, named as the diagnostics they are (never LoCoMo F1)."""
    from memorybench.score.rows import diagnostic_name  # the scorers import nltk: only when a walk is shown

    scores = ", ".join(f"{diagnostic_name(name)} {number(value)}" for name, value in walk.scores.items())
    return f"lexical diagnostics {scores} (not {bench.name}'s score, which is its judge's)"


def judge_figures(walker: PackWalker, bench: Benchmark) -> dict[str, dict[str, Any]]:
    """judge id -> its autorater_metrics.json, for each judge of another benchmark's pack whose
    metrics hold that benchmark's own block (its `judge_figures` module's `FIELD`); none for a
    LoCoMo pack (its J is each verdict's mean, as ever)."""
    out: dict[str, dict[str, Any]] = {}
    field = bench.own("judge_figures", "FIELD") if bench.judge_figures else None
    for judge_id in walker.judges() if field else ():
        path = walker.pack.judge_path(judge_id, layout.JUDGE_METRICS)
        metrics = walker.pack.json(path) if walker.pack.exists(path) else {}
        if isinstance(metrics.get(field), dict):
            out[judge_id] = metrics
    return out


def _own_question_lines(walker: PackWalker, bench: Benchmark, judge_id: str, question_id: str, walk_category: int) -> list[str]:
    """The benchmark's own reading of one question's judge calls (BEAM: each rubric item's
    verdict under both profiles), where its figures module has one (`question_lines`)."""
    if not bench.judge_figures:
        return []
    try:
        reading = bench.own("judge_figures", "question_lines")
    except AttributeError:
        return []
    path = walker.pack.judge_path(judge_id, layout.JUDGE_TRACES)
    rows = [r for r in walker.pack.rows(path) if r.get("question_id") == question_id] if walker.pack.exists(path) else []
    return list(reading(walk_category, rows))


def _figure_line(bench: Benchmark, judge_id: str, metrics: dict[str, Any], kind_name: str) -> str | None:
    """One line of a judge's own figures over the pack (`--brief`), as the benchmark's
    `judge_figures` module writes it (`brief_line`); None where it writes none."""
    line = getattr(imported(bench.judge_figures), "brief_line", None) if bench.judge_figures else None
    return line(judge_id, metrics, kind_name) if line is not None else None


def _basis(blame: Blame, bench: Benchmark) -> str:
    """What decided correctness (`Blame.basis`); on another benchmark without a judge verdict, said to be
    the lexical diagnostic it is (`stemmed_token_f1>=0.5`), not the benchmark's score."""
    if bench.own_lexical_rules or blame.basis.startswith("judge "):
        return blame.basis
    return f"{blame.basis}: no judge verdict, a lexical diagnostic, not {bench.name}'s score"


def render_brief(
    walk: Walk, blame: Blame, bench: Benchmark | None = None, figures: dict[str, dict[str, Any]] | None = None
) -> str:
    """`--brief`: a few lines (question, answer, gold, scores, blame class); the full walk is `show` without it.
    Another benchmark's pack (`bench`): its kind, its judges' figures (`judge_figures`) and its lexical diagnostics."""
    bench = bench or benchmark_named(None)
    s = walk.source
    judges = "; ".join(f"judge {j.judge_id} mean {_score(j.mean_score)}" for j in walk.judges)
    if bench.own_lexical_rules:
        scores = ", ".join(f"{name} {_score(v)}" for name, v in walk.scores.items()) + (f"; {judges}" if judges else "")
    else:
        scores = (f"{judges}; " if judges else "no judge; ") + _lexical(walk, bench, _score)
    lines = [
        f"{walk.question_id} in {walk.pack}",
        f"  question: {s.question!r} ({bench.kind_word} {s.category}, {_kind(walk, bench)})",
        f"  answer:   {walk.prediction!r}",
        f"  gold:     {s.gold!r}" + (f"; adversarial answer: {s.adversarial_answer!r}" if s.adversarial_answer else ""),
        "  scores:   " + scores,
    ]
    e = s.gold_error
    if e is not None:  # the audit's finding, as the full walk prints it (section 1)
        lines.append(
            f"  gold error: KNOWN {'GOLD' if e.kind == 'answer' else 'CITATION'} ERROR ({e.where})"
            + (f": corrected answer {e.corrected_answer!r}" if e.kind == "answer" else ": the gold answer stands")
        )
    for judge_id, metrics in (figures or {}).items():
        line = _figure_line(bench, judge_id, metrics, s.category_name)
        lines += [f"  pack:     {line}"] if line else []
    lines += [
        f"  blame:    {blame.blame} (correctness by {_basis(blame, bench)})",
        "  (the whole walk, memory to judges: the same command without --brief)",
    ]
    return "\n".join(lines) + "\n"


def render_walk(walk: Walk, walker: PackWalker, blame: Blame | None = None, *, brief: bool = False) -> str:
    """The walk as plain text, with every text in full (or cut, `brief`)."""
    s, m, p = walk.source, walk.memory, walk.prompt
    bench = benchmark_of_pack(walker.meta)
    out = [
        f"{walk.question_id} in {walk.pack}",
        f"run {walk.run_id} (config sha256 {walk.config_sha256[:12]}…); "
        + ", ".join(f"{g}={walk.choices[g]}" for g in ("memory", "answerer", "reader", "writer") if g in walk.choices),
        "",
        "1. Source row (gold and evidence joined after answering: no model saw them)",
        f"  {s.data_path} (sha256 {s.data_sha256}), sample {s.sample_id}, qa[{s.qa_index}]",
        f"  question: {s.question!r}",
        f"  {bench.kind_word}: {s.category} ({_kind(walk, bench)})",
        f"  gold: {s.gold!r}" + (f"; adversarial answer: {s.adversarial_answer!r}" if s.adversarial_answer else ""),
    ]
    if bench.sample_note is not None:  # how the benchmark built this sample (LoCoMo-Plus: its stitching)
        note = imported(bench.sample_note)(s.sample_id)
        if note:
            out.append(f"  built: {note}")
    if s.evidence is None:
        out.append(f"  evidence: unknown ({s.note})")
    else:
        out.append(f"  evidence: {', '.join(s.evidence) or 'none'}")
        for t in s.evidence_turns:
            out.append(
                f"    {t.dia_id} [session {t.session}, {t.date_time}] {t.rendered}"
                if t.rendered
                else f"    {t.dia_id}: no such turn in the conversation"
            )
    out += _gold_error(s, brief)
    out += [
        "",
        "2. Memory",
        f"  method {m.method} ({'question-dependent' if m.question_dependent else 'question-independent'}); "
        f"{m.item_count} item(s); manifest {m.manifest.path + ' line ' + str(m.manifest.line) if m.manifest else 'missing'}",
        f"  text given: {m.text_path} (sha256 {m.memory_sha256})",
    ]
    if m.metadata:
        out.append(f"  metadata: {json.dumps(m.metadata, sort_keys=True, ensure_ascii=False)}")
    out.append(f"  lineage (memory/lineage.jsonl, {len(m.lineage)} item(s)):")
    for item in m.lineage:
        sources = list(item.sources)
        if brief and len(sources) > 6:
            sources = [*sources[:3], "…", *sources[-2:], f"({len(item.sources)})"]
        out.append(f"    line {item.line}: {item.item_id} <- {', '.join(sources) or '(no source)'}")
    if m.retrieval is not None:
        r = m.retrieval
        out.append(
            f"  retrieved for this question ({r.where.path} line {r.where.line}): {r.memory_tokens} tokens, "
            f"{r.dropped_by_budget} hit(s) left out by the budget{', text cut' if r.cut_by_budget else ''}"
        )
        for rank, hit in enumerate(r.hits, start=1):
            out.append(f"    {rank}. {hit.get('item_id')} score {hit.get('score')}")
    if m.writer_calls:
        out.append(f"  writer calls for {walk.sample_id} ({len(m.writer_calls)}):")
        for call in m.writer_calls:
            out += ["  " + line for line in _call(call)]
    for failure in m.writer_failures:
        out.append(
            f"  writer task given up: {failure.get('role')} session {failure.get('session')}: {failure.get('error')} "
            f"-> {failure.get('action')}"
        )
    out += ["", "3. Prompt as sent" if walk.prompt is None or p.recorded_as == "reader_payload_sha256" else "3. Task as sent"]
    if p is None:
        out.append(f"  no trace of a prompt for this question (answerer {walk.answerer})")
    else:
        check = "matches" if p.matches else "DOES NOT MATCH (run `memorybench verify`)"
        slots = "; ".join(
            f"{name} = " + (f"ref {v['ref'][:12]}… ({v.get('path')})" if v.get("ref") else repr(v.get("text")))
            for name, v in p.slots.items()
        )
        out += [
            f"  template prompts/{p.template} (sha256 {p.template_sha256}); {p.where.path} line {p.where.line}",
            f"  slots: {slots}" + (f"; then footer prompts/{p.footer}" if p.footer else ""),
            f"  sha256 of the rebuilt message {p.sha256} {check} {p.recorded_as} {p.recorded_sha256}",
        ]
        if p.system is not None:
            out += ["  system message:", *_text(p.system, brief)]
        out += ["  user message:" if p.system is not None else "  task (stdin):", *_text(p.message, brief)]
    out += ["", "4. Model calls"]
    for call in walk.calls if not walk.agent else ():  # an agent's process lines below carry its calls
        out += _call(call)
    for process in walk.agent:
        out += _agent(process, brief)
    if not walk.calls and not walk.agent:
        out.append("  none recorded")
    out += [
        "",
        "5. Answer and scores",
        f"  reply {walk.reply!r} -> prediction {walk.prediction!r} ({walk.prediction_at.path} line {walk.prediction_at.line}; "
        f"{walk.csv_at.path} line {walk.csv_at.line})",
        "  "
        + (
            ", ".join(f"{name} {value!r}" for name, value in walk.scores.items())
            + f" ({bench.title}'s {bench.kind_word} {walk.category} rule; exact match and token F1 are ours)"
            if bench.own_lexical_rules
            else _lexical(walk, bench)
        ),
        "",
        "6. Judges",
    ]
    if not walk.judges:
        out.append(
            "  no finished judge (run `memorybench autorater PACK`)"
            if bench.own_lexical_rules
            else f"  no finished judge, so no {bench.name} score (run `memorybench autorater PACK judge={bench.name}`)"
        )
    figures = judge_figures(walker, bench)
    for judge in walk.judges:
        out.append(f"  {judge.judge_id} (model {judge.model}): mean score {judge.mean_score}")
        for v in judge.verdicts:
            extra = f", {v.failure}: {v.error}" if v.failure else ""
            # Mem0's lexical F1 and BLEU-1 are LoCoMo's (Mem0's protocol): another benchmark's judge has none
            lexical = f"mem0 F1 {v.mem0_f1}, BLEU-1 {v.mem0_bleu1}; " if bench.own_lexical_rules else ""
            out.append(
                f"    pass {v.pass_}: {v.status} (label {v.label_raw!r}, score {v.score}{extra}; {lexical}"
                f"{v.where.path} line {v.where.line})"
            )
        for call in judge.calls:
            out += ["  " + line for line in _call(call)]
        out += ["  " + line for line in _own_question_lines(walker, bench, judge.judge_id, walk.question_id, walk.category)]
        if judge.judge_id in figures:
            where = walker.pack.judge_path(judge.judge_id, layout.JUDGE_METRICS)
            out.append(f"  over the whole pack, by this judge ({where}):")
            out += ["    " + line for line in bench.own("judge_figures", "lines")(figures[judge.judge_id])]
    if blame is not None:
        stored, given, used = _blame_facts(walk, blame, bench)
        out += [
            "",
            "7. Blame (memorybench.compare.blame)",
            f"  {blame.blame} (correctness by {_basis(blame, bench)})",
            f"  evidence_stored {stored}",
            f"  evidence_given {given}",
            f"  answer_used_evidence {used}",
        ]
    return "\n".join(out) + "\n"


def show(location: str, question_id: str, *, brief: bool = False, as_json: bool = False) -> str:
    walker = PackWalker.open(location)
    walk = walker.walk(question_id)
    blame = question_blame(walker, question_id)
    if as_json:
        data: dict[str, Any] = {"walk": asdict(walk), "blame": blame.as_dict(), "memory_text": walker.text(walk.memory.text_path)}
        return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    if brief:
        bench = benchmark_of_pack(walker.meta)
        return render_brief(walk, blame, bench, judge_figures(walker, bench))
    return render_walk(walk, walker, blame)


def show_main(argv: Sequence[str]) -> int:
    """`memorybench show PACK QUESTION_ID [--brief] [--json]`."""
    parser = OneLineParser(prog="memorybench show", description="Print one question's walk through a pack.")
    parser.add_argument("pack", help="a pack folder <packs>/<name>/runs/<run_id>, or its gs:// URI")
    parser.add_argument("question_id", help="e.g. conv-26-q-0 ({sample_id}-q-{qa_index})")
    parser.add_argument("--brief", action="store_true", help="a few lines: question, answer, gold, scores, blame class")
    parser.add_argument("--json", action="store_true", help="print the walk and the blame as JSON")
    ns = parser.parse_args(list(argv))
    # the walk quotes the dataset, prompts, memory and model replies: no control character reaches the terminal
    sys.stdout.write(printable(show(ns.pack, ns.question_id, brief=ns.brief, as_json=ns.json)))
    return 0
