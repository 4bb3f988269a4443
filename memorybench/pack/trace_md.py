"""TRACE.md: the first answered question's walk (`memorybench.pack.walk`) as Markdown.

Written from the pack's own files, with the real paths and line numbers, so that a
reader can audit a number without knowing the code. `memorybench show PACK QUESTION_ID`
prints the same walk for any question, with the texts in full. The walk of a reader
names its prompt template and trace; an agent's names its task, its process, its
trajectory and notes. The walk shows no gold and no evidence; a last section, marked
scorer-side (after the answer, never seen by a model), gives the gold, LoCoMo's rule for the
category and the arithmetic of the LoCoMo F1. Another benchmark's pack (LongMemEval) is
written in its own terms: the question's kind and subsets (type, abstention), and scorer-side
the rule its lexical score was computed by (`memorybench.score.rows.PLAIN_RULE` for every
kind, a diagnostic named `stemmed_token_f1`, never LoCoMo F1) with its arithmetic, beside
where the benchmark's own score comes from (its judge's accuracy, `memorybench autorater`).
Numbers have 4 decimals; no Python reprs of dicts (`show` adds the evidence).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from memorybench.benchmark import Benchmark, benchmark_named, benchmark_of_pack
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
            f"- LoCoMo F1 {_num(walk.scores['locomo_f1'])} (category {walk.category} rule, worked out in section 6), "
            f"exact match {_num(walk.scores['exact_match'])}, token F1 {_num(walk.scores['token_f1'])} (ours).",
            f"- Aggregated into `{layout.METRICS}`: `scores.locomo_f1.overall`, its subsets and "
            f'`scores.locomo_f1.by_kind["{walk.category}"]`.',
        ]
    else:
        from memorybench.score.rows import diagnostic_name  # the scorers import nltk: only when a trace is written

        task = " `scores.locomo_f1.task_average`," if bench.task_averaged else ""
        source = [
            f"- File: `{path}` (sha256 `{walk.source.data_sha256}`), the {bench.name} question `{qid}` "
            f"(sample `{sample_id}`, `qa[{walk.qa_index}]`).",
            f"- Question: {quoted(walk.question)}; {_kind(walk, bench)}.",
        ]
        scores = [
            f"- Lexical diagnostics, not {bench.name}'s score (its judge's accuracy, section 6): "
            f"{diagnostic_name('locomo_f1')} {_num(walk.scores['locomo_f1'])} (column `locomo_f1`; its rule is worked out "
            f"in section 6), exact match {_num(walk.scores['exact_match'])}, token F1 {_num(walk.scores['token_f1'])}.",
            f"- Aggregated into `{layout.METRICS}` as diagnostics: `scores.locomo_f1.overall`,{task} "
            f'`scores.locomo_f1.by_kind["{walk.category}"]` (each labelled a lexical diagnostic there).',
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


def _tokens(tokens: list[str]) -> str:
    return f"{len(tokens)} token(s): " + ", ".join(f"`{printable(t)}`" for t in tokens) if tokens else "0 tokens"


def _f1_arithmetic(prediction: str, gold: str, indent: str = "") -> tuple[list[str], float]:
    """LoCoMo's `f1_score` of one pair, step by step: tokens after normalisation and Porter
    stemming, their multiset overlap, precision, recall and F1 (as `score.locomo._f1_of_tokens`)."""
    from memorybench.score.locomo import normalize_answer, stemmed_tokens

    pred_tokens, gold_tokens = stemmed_tokens(prediction), stemmed_tokens(gold)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    lines = [
        f"{indent}- prediction {quoted(prediction)} -> normalised {quoted(normalize_answer(prediction))} -> {_tokens(pred_tokens)}",
        f"{indent}- gold {quoted(gold)} -> normalised {quoted(normalize_answer(gold))} -> {_tokens(gold_tokens)}",
    ]
    if same == 0:
        return lines + [
            f"{indent}- overlap: no shared token, so F1 = 0.0000 (LoCoMo's rule, also when both sides are empty)"
        ], 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    f1 = 2 * precision * recall / (precision + recall)
    shared = ", ".join(f"`{printable(t)}`" + (f" x{n}" if n > 1 else "") for t, n in common.items())
    return lines + [
        f"{indent}- overlap (shared tokens, with repeats): {same} ({shared})",
        f"{indent}- precision = overlap / prediction tokens = {same}/{len(pred_tokens)} = {precision:.4f}; "
        f"recall = overlap / gold tokens = {same}/{len(gold_tokens)} = {recall:.4f}",
        f"{indent}- F1 = 2 x precision x recall / (precision + recall) = {f1:.4f}",
    ], f1


def _scorer_side(walk: Walk) -> list[str]:
    """Section 6, scorer-side: the gold, the category's rule and the arithmetic of the LoCoMo F1,
    all joined after the answer was stored (no prompt held any of it)."""
    from memorybench.score.locomo import ABSTENTION_PHRASES

    gold, category, prediction = walk.source.gold, walk.category, walk.prediction
    name = walk.source.category_name
    lines = [
        "## 6. Scorer side (after the answer, never seen by a model)",
        "- Everything in this section was joined after the answer was stored; no prompt held it.",
        f"- Gold: {quoted(gold) if isinstance(gold, str) else _num(gold)} (`{walk.prediction_at.path}` line "
        f"{walk.prediction_at.line}, field `gold`, copied from the source row).",
    ]
    if category == 5:
        phrases = " or ".join(repr(p) for p in ABSTENTION_PHRASES)
        found = [p for p in ABSTENTION_PHRASES if p in (prediction or "").lower()]
        computed = 1.0 if found else 0.0
        lines += [
            f"- Rule (LoCoMo, category 5, {name}): the gold is ignored; the score is 1 if the lowercased prediction "
            f"contains {phrases}, else 0.",
            f"- The prediction contains {', '.join(repr(p) for p in found) if found else 'neither phrase'}: "
            f"LoCoMo F1 = {computed:.4f}.",
        ]
    elif gold is None or prediction is None:
        return lines + ["- No gold or no prediction: LoCoMo's rule cannot be worked out here.", ""]
    elif category == 1:
        parts_p = [x.strip() for x in prediction.split(",")]
        parts_g = [x.strip() for x in str(gold).split(",")]
        lines += [
            f"- Rule (LoCoMo, category 1, {name}): prediction and gold are split on `,`; each gold part takes its best "
            "F1 over the prediction parts; the score is the mean over the gold parts. Each F1 is LoCoMo's token F1: "
            "normalise (commas and ASCII punctuation dropped, lowercase, a/an/the/and removed), split on spaces, "
            "Porter-stem, count the shared tokens."
        ]
        best: list[float] = []
        for number, g in enumerate(parts_g, 1):
            scored = [_f1_arithmetic(p, g, "  ") for p in parts_p]
            at = max(range(len(scored)), key=lambda i: scored[i][1])
            best.append(scored[at][1])
            lines += [
                f"- gold part {number} of {len(parts_g)}: best over {len(parts_p)} prediction part(s) is part {at + 1}, "
                f"F1 {scored[at][1]:.4f}",
                *scored[at][0],
            ]
        import numpy as np  # LoCoMo's mean (pairwise summation), as score.locomo takes it

        computed = float(np.mean(best))
        lines.append(
            f"- LoCoMo F1 = mean of {len(best)} part(s) ({' + '.join(f'{b:.4f}' for b in best)}) / {len(best)} = {computed:.4f}."
        )
    else:
        used = str(gold).split(";")[0].strip() if category == 3 else str(gold)
        cut = f" before its first `;` ({quoted(used)})" if category == 3 else ""
        lines.append(
            f"- Rule (LoCoMo, category {category}, {name}): one token F1 of the whole prediction against the gold{cut}: "
            "normalise (commas and ASCII punctuation dropped, lowercase, a/an/the/and removed), split on spaces, "
            "Porter-stem, count the shared tokens."
        )
        arithmetic, computed = _f1_arithmetic(prediction, used)
        lines += arithmetic + [f"- LoCoMo F1 = {computed:.4f}."]
    return lines + [_against_stored(walk, computed), ""]


def _against_stored(walk: Walk, computed: float, shown_as: str | None = None) -> str:
    """The line that checks the arithmetic above against the stored `locomo_f1` (`shown_as`:
    the name another benchmark's pack shows it by)."""
    recorded = walk.scores.get("locomo_f1")
    if recorded is not None and abs(recorded - computed) > 1e-9:
        return f"- This differs from the stored score {_num(recorded)}: see `memorybench verify`."
    shown = f" (shown as `{shown_as}`)" if shown_as else ""
    return f"- The same as `locomo_f1`{shown} in `{walk.csv_at.path}` line {walk.csv_at.line}."


def _diagnostic_side(walk: Walk, bench: Benchmark) -> list[str]:
    """Section 6 of another benchmark's pack: the gold, its kind and subsets, where its score comes
    from (its judge), and the rule its lexical diagnostic was computed by (`PLAIN_RULE` for every
    kind: its kind numbers are not LoCoMo's categories) with the arithmetic."""
    from memorybench.score.rows import PLAIN_RULE, diagnostic_name

    gold, prediction, name = walk.source.gold, walk.prediction, diagnostic_name("locomo_f1")
    rule = bench.lexical_rule(walk.category)
    whose = (
        f"every {bench.name} question, whatever its {bench.kind_word},"
        if bench.lexical_rules is None
        else f"a {bench.name} question of {bench.kind_word} {walk.category}"
    )
    if rule == PLAIN_RULE:
        applied = (
            f"{whose} is scored by LoCoMo's single-hop rule (`memorybench.score.rows.PLAIN_RULE`, category "
            f"{PLAIN_RULE}; no LoCoMo category rule applies, its {bench.kind_word} numbers are not LoCoMo's "
            "categories): one token F1 of the whole prediction against the whole gold: normalise (commas and ASCII "
            "punctuation dropped, lowercase, a/an/the/and removed), split on spaces, Porter-stem, count the shared tokens."
        )
    else:
        applied = (
            f"a {bench.name} question of {bench.kind_word} {walk.category} is scored by LoCoMo's category {rule} "
            f"rule (`Benchmark.lexical_rules`), as LoCoMo's own question is."
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
    if rule not in (2, PLAIN_RULE):  # a rule beyond one token F1 (commas, semicolons, refusal phrases)
        from memorybench.score.locomo import locomo_score

        computed = locomo_score(prediction or "", gold, rule) if rule == 5 or gold is not None else None
        if computed is None:
            return lines + ["- No gold: the rule cannot be worked out here.", ""]
        return lines + [f"- {name} = {computed:.4f}.", _against_stored(walk, computed, name), ""]
    if gold is None or prediction is None:
        return lines + ["- No gold or no prediction: the rule cannot be worked out here.", ""]
    arithmetic, computed = _f1_arithmetic(prediction, str(gold))
    lines += arithmetic + [f"- {name} = {computed:.4f}."]
    return lines + [_against_stored(walk, computed, name), ""]


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
