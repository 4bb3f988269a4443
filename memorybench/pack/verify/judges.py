"""Each judge message rebuilt from its template file and slots, by the judge's own protocol.

A judge trace (`judge_trace.v1`, `autorater/<judge id>/traces.jsonl`, or the flat layout's
`autorater/traces.jsonl`) stores its one user message as a template file of the judge's
folder (`request.template`, e.g. `prompts/mem0_accuracy_prompt.txt`, or for LongMemEval's
judge the file of the question's type or the abstention one) and the slot values. The
folder's meta names the protocol (`identity.protocol`; the flat layout's: mem0); the
protocol says which template and slots a stored answer takes (`template_file`, `slots`) and
how they make the message (`fill`: Mem0's `str.format` by name, LongMemEval's positional
`format` of the authors). For every trace: the template file hashes to the sha256 the trace
records; the template and slots are those the protocol gives the question's prediction row;
the message filled from them hashes to the trace's `judge_payload_sha256`. No pin is read:
the message is rebuilt from the pack's own files.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from types import SimpleNamespace
from typing import Any

from memorybench.hashing import sha256_bytes, sha256_text
from memorybench.pack import layout
from memorybench.pack.verify.context import NOT_RECORDS, Context
from memorybench.pack.verify.findings import Findings
from memorybench.records import jsonl_lines, load_json
from memorybench.registry import JUDGES

__all__ = ["check_judge_traces"]

CODE = "hash.judge"


def _protocol(ctx: Context, folder: str) -> str | None:
    """The protocol named by the folder's meta (mem0 for a meta without one); None without a readable meta."""
    path = ctx.root / folder / layout.JUDGE_META
    if not path.is_file():
        return None
    try:
        meta = load_json(path.read_bytes())
    except (ValueError, UnicodeDecodeError):
        return None  # the json check says so
    if not isinstance(meta, dict):
        return None
    identity = meta.get("identity") or meta.get("judge_identity") or {}
    return str(identity.get("protocol") or "mem0") if isinstance(identity, dict) else None


def _trace_files(ctx: Context) -> list[str]:
    """Every judge's traces.jsonl: in a judge folder, or the flat layout's."""
    found = []
    for relpath in ctx.rel.values():
        parts = relpath.split("/")
        if relpath.startswith(NOT_RECORDS) or parts[0] != layout.AUTORATER or parts[-1] != layout.JUDGE_TRACES:
            continue
        if len(parts) == 2 or (len(parts) == 3 and parts[1] not in layout.AUTORATER_SHARED):
            found.append(relpath)
    return sorted(found)


def check_judge_traces(ctx: Context, out: Findings) -> None:
    """Rebuild every judge message from its template file and slots by its protocol; check the hashes."""
    predictions = {row["question_id"]: row for _, row in ctx.rows.get("predictions.jsonl", [])}
    for relpath in _trace_files(ctx):
        if relpath in ctx.bad_files or out.about(relpath, ("json", "schema")):
            continue
        folder = str(PurePosixPath(relpath).parent)
        name = _protocol(ctx, folder)
        if name is None:
            continue  # no readable meta: its own finding
        kind = JUDGES.get(name) if name in JUDGES else None
        templates: dict[str, str | None] = {}
        for line, raw in jsonl_lines((ctx.root / relpath).read_bytes()):
            try:
                trace = load_json(raw)
                request = trace["request"]
                qid, template_rel, slots = trace["question_id"], request["template"], request["slots"]
            except (ValueError, TypeError, KeyError):
                continue  # not a judge trace: the rows check says so
            if kind is None:
                out.grouped(
                    CODE,
                    relpath,
                    line,
                    f"the judge protocol {name!r} of {folder} is not known here, so its "
                    "messages cannot be rebuilt (install the plugin that registers it)",
                    "protocol",
                )
                break
            template = _template(ctx, out, folder, template_rel, request.get("template_sha256"), templates, relpath, line)
            row = predictions.get(qid)
            if row is not None and getattr(kind, "several_calls", False):
                # a question judged by several calls (BEAM): each call's template is one of the
                # protocol's, and its slots hold the stored row's answer (and question, if any)
                stored = SimpleNamespace(**row)
                name_of = PurePosixPath(str(template_rel)).name
                why = (
                    kind.slots_fit(stored, name_of, slots)
                    if name_of in kind.template_files()
                    else (f"names {template_rel}, no template of the {name} protocol")
                )
                if why is not None:
                    out.grouped(CODE, relpath, line, f"the judge call {trace.get('part')!r} of {qid}: {why}", "slots")
            elif row is not None:
                stored = SimpleNamespace(**row)
                expected = f"{layout.JUDGE_PROMPTS}/{kind.template_file(stored)}"
                if template_rel != expected:
                    out.grouped(
                        CODE,
                        relpath,
                        line,
                        f"the judge message of {qid} names {template_rel}; its {name} protocol "
                        f"fills {expected} for this question",
                        "template",
                    )
                elif slots != kind.slots(stored):
                    out.grouped(
                        CODE,
                        relpath,
                        line,
                        f"the judge slots of {qid} are not its stored row's question, gold and "
                        f"prediction as the {name} protocol fills them",
                        "slots",
                    )
            if template is None:
                continue
            try:
                message = kind.fill(template, slots)
            except (KeyError, IndexError, ValueError, TypeError) as e:
                out.grouped(
                    CODE, relpath, line, f"the judge message of {qid} cannot be rebuilt from {template_rel}: {e!r}", "fill"
                )
                continue
            if sha256_text(message) != trace.get("judge_payload_sha256"):
                out.grouped(
                    CODE,
                    relpath,
                    line,
                    f"the judge message of {qid} rebuilt from {template_rel} and its slots does not hash to judge_payload_sha256",
                    "payload",
                )


def _template(
    ctx: Context,
    out: Findings,
    folder: str,
    template_rel: Any,
    sha256: Any,
    cache: dict[str, str | None],
    relpath: str,
    line: int,
) -> str | None:
    """A trace's template file (relative to its judge folder), when it exists and hashes to what the trace records."""
    key = f"{template_rel}\0{sha256}"
    if key in cache:
        return cache[key]
    path = ctx.inside(f"{folder}/{template_rel}") if isinstance(template_rel, str) else None
    text = None
    if path is None or not path.is_file():
        out.grouped(
            CODE, relpath, line, f"the judge template {template_rel!r} is not a file of {folder}", f"missing {template_rel}"
        )
    else:
        data = path.read_bytes()
        if sha256_bytes(data) != sha256:
            out.grouped(
                CODE,
                f"{folder}/{template_rel}",
                None,
                f"hashes to {sha256_bytes(data)[:12]}…, the judge traces record {str(sha256)[:12]}…",
                "template hash",
            )
        else:
            text = data.decode("utf-8", errors="replace")
    cache[key] = text
    return text
