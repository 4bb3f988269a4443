"""Each reader message rebuilt from its template and slots: hashes, the prediction it gave, and gold in it.

A trace stores the user message as a template (a prompts/ file) and slot values (inline
text, or a ref that REFERENCE_PIN.json resolves). The message is filled again (or, for a
trace with a `renderer`, rendered again by that pinned template with jinja2) and must
hash to the trace's reader_payload_sha256; the trace must agree with its prediction row
(payload hash, reply, memory) and with the dataset's question; and the rebuilt prompt,
minus the question's own text, is scanned for gold (`contamination.scan_segments`).

A benchmark's own protocol may pose a question as its own words differently (LoCoMo's,
`renderer` locomo: category 2 with a date suffix, category 5 as a two-way choice whose
options are the question's `adversarial_answer` and "Not mentioned in the conversation"):
the question as posed is the question's own text, not a leak, once the template finds the
trace's slots the dataset's (`BenchmarkReaderTemplate.posed_finding`). A row of a question
posed as a choice must hold the options its prompt posed and its reply mapped back as the
protocol maps it (`read_reply`). Gold (`answer`) in any prompt, and a trap in any other
prompt, is scanned for as before.
"""

from __future__ import annotations

import hashlib
from typing import Any

from memorybench.pack.verify.context import Context
from memorybench.pack.verify.contamination import scan_segments
from memorybench.pack.verify.findings import Findings
from memorybench.templates import BenchmarkReaderTemplate, pinned_reader, pinned_reader_names

__all__ = ["check_traces"]

TRACES = "reader/traces.jsonl"


def _memory_key(request: dict[str, Any]) -> Any:
    ref = request["slots"]["memory"].get("ref")
    return ("ref", ref) if ref else None


class _PayloadHasher:
    """sha256 of `fill_template(template, memory, question)`, the shared prefix hashed once.

    The message is (template before {memory}, question filled) + memory + (the rest,
    question filled); the hash state after the first two parts is kept per memory ref,
    so 1,986 prompts of 70 kB do not mean 140 MB hashed.
    """

    def __init__(self) -> None:
        self._prefix_hashes: dict[tuple[str, Any], Any] = {}

    def __call__(self, template: str, memory: str, memory_key: Any, question: str) -> str:
        before, _, after = template.partition("{memory}")
        head = before.replace("{question}", question)
        key = (head, memory_key) if memory_key is not None else None
        state = self._prefix_hashes.get(key) if key is not None else None
        if state is None:
            state = hashlib.sha256(head.encode("utf-8"))
            state.update(memory.encode("utf-8"))
            if key is not None:
                self._prefix_hashes[key] = state
        final = state.copy()
        final.update(after.replace("{question}", question).encode("utf-8"))
        return final.hexdigest()


def check_traces(ctx: Context, out: Findings) -> None:
    """Rebuild each reader message from its template and slots: payload hashes, memory, gold."""
    traces = ctx.rows[TRACES]
    if not traces:
        return
    predictions = {row["question_id"]: (number, row) for number, row in ctx.rows["predictions.jsonl"]}
    questions = {q.question_id: q for q in ctx.questions} if ctx.questions is not None else {}
    recorded = (ctx.meta or {}).get("prompts", {})
    system = ctx.templates.get("system.txt")
    lowered_refs: dict[Any, str] = {}
    payload_sha256 = _PayloadHasher()

    for line, trace in traces:
        qid = trace["question_id"]
        request = trace["request"]
        template = ctx.templates.get(request["template"])
        if ctx.meta is not None and recorded.get(request["template"]) != request["template_sha256"]:
            out.grouped(
                "hash.prompt",
                TRACES,
                line,
                f"template {request['template']} (sha256 {request['template_sha256'][:12]}…) is not a prompt run_meta.json records",
                "template",
            )
            template = None
        if system is not None and request.get("system") != system:
            out.grouped("hash.prompt", TRACES, line, "the system message is not prompts/system.txt", "system")

        # slot values: inline text, or a ref that REFERENCE_PIN.json resolves
        values: dict[str, str | None] = {}
        refs: list[str] = []
        for name, slot in request["slots"].items():
            if slot.get("ref") is not None:
                refs.append(slot["ref"])
                if ctx.pin is not None and slot["ref"] not in ctx.pin["refs"]:
                    out.grouped(
                        "hash.reference",
                        TRACES,
                        line,
                        f"slot {name} refers to {slot['ref'][:12]}…, which REFERENCE_PIN.json does not pin",
                        "unpinned",
                    )
                values[name] = ctx.ref_texts.get(slot["ref"])
            else:
                values[name] = slot.get("text")
        renderer = request.get("renderer")
        pinned = pinned_reader(renderer)
        if renderer and pinned is None:
            out.grouped(
                "schema",
                TRACES,
                line,
                f"renderer {renderer!r} is not a pinned template ({', '.join(pinned_reader_names())})",
                "renderer",
            )
            continue
        expected = sorted(pinned.slot_names(values)) if pinned is not None else ["memory", "question"]
        if sorted(values) != expected:
            out.grouped("schema", TRACES, line, f"reader slots are {sorted(values)}, expected {expected}", "slots")
            continue
        memory, asked = values["memory"], values["question"]
        source = questions.get(qid)
        if source is not None and asked is not None and asked != source.question:
            out.grouped(
                "row.mismatch", TRACES, line, f"the question slot of {qid} is not the dataset's question text", "question"
            )
        # a benchmark's own protocol: the question as it posed it (LoCoMo's category and options)
        posed = _posed_as_the_dataset(out, line, qid, pinned, values, source)

        prediction_line, prediction = predictions.get(qid, (None, None))
        if prediction is not None:
            _check_against_prediction(out, trace, line, prediction_line, prediction, refs)
            if getattr(pinned, "poses_choice", False) or prediction.get("options") is not None:
                _check_choice(out, trace, line, prediction_line, prediction, values, pinned)
        if template is None or memory is None or asked is None:
            continue  # the prompt file or a reference is already a finding: nothing to rebuild from
        if pinned is not None:
            try:
                rendered = pinned.render(template, {name: value or "" for name, value in values.items()})
            except (KeyError, ValueError) as e:
                out.grouped(
                    "hash.payload",
                    TRACES,
                    line,
                    f"the message of {qid} cannot be rebuilt from prompts/{request['template']}: {e}",
                    "render",
                )
                continue
            rebuilt_sha256 = hashlib.sha256(rendered.encode("utf-8")).hexdigest()
        else:
            rebuilt_sha256 = payload_sha256(template, memory, _memory_key(request), asked)
        if rebuilt_sha256 != trace["reader_payload_sha256"]:
            out.grouped(
                "hash.payload",
                TRACES,
                line,
                f"the user message of {qid} rebuilt from prompts/{request['template']} and its slots"
                " does not hash to its reader_payload_sha256",
                "trace",
            )

        if ctx.needles is None:
            continue
        # the message as segments (the memory scanned once per ref), the question's own text removed:
        # a question may name another question's gold
        sample = ctx.needles.sample(trace["sample_id"])
        own = (source.question if source is not None else asked).lower()
        if posed is not None:  # the question as its protocol poses it: its own trap among the options is no leak
            own = posed.lower()
        if pinned is not None:
            # the memory text, when it stands in the message whole (mem0_rag's CONTEXT), is
            # scanned once per ref; the per-speaker prompts reformat it: the message is scanned
            head, found, tail = rendered.partition(memory) if memory else (rendered, "", "")
            if not found:
                memory, head, tail = "", rendered, ""
        else:
            before, _, after = template.partition("{memory}")
            head, tail = before.replace("{question}", asked), after.replace("{question}", asked)
        memory_key = _memory_key(request) if memory or pinned is None else None
        low_memory = lowered_refs.get(memory_key) if memory_key else None
        if low_memory is None:
            low_memory = memory.lower()
            if memory_key:
                lowered_refs[memory_key] = low_memory
        segments = [
            (head.lower().replace(own, "\x00"), None),
            (low_memory, memory_key),
            (tail.lower().replace(own, "\x00"), None),
        ]
        scan_segments(ctx, out, sample, segments, TRACES, line, f"the reader prompt of {qid}")


def _posed_as_the_dataset(
    out: Findings, line: int, qid: str, pinned: Any, values: dict[str, str | None], source: Any
) -> str | None:
    """The question as a benchmark's own protocol posed it, where the trace's slots are the
    dataset question's as that protocol poses it (`posed_finding`); None otherwise (an edited
    question is already a finding, slots that are not the dataset's become one; either way the
    prompt is scanned as any)."""
    if not isinstance(pinned, BenchmarkReaderTemplate) or source is None or values.get("question") != source.question:
        return None
    finding = pinned.posed_finding(qid, values, source)
    if finding is not None:
        out.grouped("row.mismatch", TRACES, line, finding[0], finding[1])
        return None
    return pinned.posed_question(values)


def _check_choice(
    out: Findings,
    trace: dict[str, Any],
    line: int,
    prediction_line: int | None,
    prediction: dict[str, Any],
    values: dict[str, str | None],
    pinned: Any,
) -> None:
    """A row of a question posed as a choice (LoCoMo's two-way choice): the options its trace
    posed, its reply, and the prediction that reply maps to (`read_reply`: LoCoMo's `get_cat_5_answer`)."""
    qid = trace["question_id"]
    posed = {"a": values["option_a"], "b": values["option_b"]} if "option_a" in values else None
    options, reply = prediction.get("options"), trace["response"].get("text")
    if options != posed:
        out.grouped(
            "row.mismatch",
            "predictions.jsonl",
            prediction_line,
            f"options of {qid} are not the options its prompt posed ({TRACES} line {line})",
            "options",
        )
        return
    if options is None or not isinstance(reply, str) or not getattr(pinned, "poses_choice", False):
        return
    read = pinned.read_reply(reply, options)
    recorded = (prediction.get("reply"), prediction["prediction"], prediction.get("choice"), prediction.get("malformed_reply"))
    if recorded != (reply.strip(), read.answer, read.choice, read.malformed):
        out.grouped(
            "row.mismatch",
            "predictions.jsonl",
            prediction_line,
            f"prediction of {qid} is not its reader reply mapped to an option as {pinned.reply_rule or f'reader.prompt={pinned.name}'} maps it"
            f" ({TRACES} line {line})",
            "choice",
        )


def _check_against_prediction(
    out: Findings, trace: dict[str, Any], line: int, prediction_line: int | None, prediction: dict[str, Any], refs: list[str]
) -> None:
    """The prediction row of a trace: the same payload hash, its reply stripped, the memory its prompt used."""
    qid = trace["question_id"]
    if prediction.get("reader_payload_sha256") != trace["reader_payload_sha256"]:
        out.grouped(
            "hash.payload",
            "predictions.jsonl",
            prediction_line,
            f"reader_payload_sha256 of {qid} differs from its trace ({TRACES} line {line})",
            "prediction",
        )
    reply = trace["response"].get("text")
    if isinstance(reply, str) and prediction.get("options") is None and prediction["prediction"] != reply.strip():
        out.grouped(
            "row.mismatch",
            "predictions.jsonl",
            prediction_line,
            f"prediction of {qid} is not its reader reply, stripped ({TRACES} line {line})",
            "reply",
        )
    if refs and prediction["memory_sha256"] not in refs:
        out.grouped(
            "hash.memory",
            TRACES,
            line,
            f"the prompt of {qid} used memory {refs[0][:12]}…, its prediction row names {prediction['memory_sha256'][:12]}…",
            "prompt",
        )
