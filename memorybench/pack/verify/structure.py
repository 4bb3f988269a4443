"""The pack as files: closed by `_SUCCESS`, every required file present, and its known records parsed.

The record checks fill the context with run_meta, REFERENCE_PIN.json, metrics.json and
the rows of the known journals that match their schemas; a file that does not parse or
match is a finding and goes into `bad_files`.
"""

from __future__ import annotations

import posixpath
from typing import Any

from pydantic import BaseModel, ValidationError

from memorybench.pack import layout, success
from memorybench.pack.schemas import Success
from memorybench.pack.verify.context import (
    KNOWN_JSON,
    KNOWN_JSONL,
    NOT_RECORDS,
    OPEN_FOLDERS,
    PROVENANCE_RECORDS,
    REQUIRED_FILES,
    Context,
)
from memorybench.pack.verify.findings import Findings
from memorybench import records
from memorybench.records import SchemaError
from memorybench.registry import ANSWERERS

__all__ = [
    "answerer_records",
    "check_known_records",
    "check_other_json",
    "check_partial_files",
    "check_reader_traces_present",
    "check_required_files",
    "check_success",
    "load_json",
    "validate",
]


# -- _SUCCESS ------------------------------------------------------------------------------


def check_success(ctx: Context, out: Findings) -> None:
    """`_SUCCESS` exists, and every marker's files have the bytes it recorded: none changed,
    none gone, none added (`memorybench.pack.success`; timestamps are never read)."""
    # a *.part is file.partial; a writer's lock file is no pack file (`memorybench.pack.lock`)
    present = [rel for rel in ctx.rel.values() if not rel.endswith(".part") and posixpath.basename(rel) != layout.LOCK_FILE]
    folders = success.marker_folders(present)
    if "" not in folders:
        out.add(
            "success.missing",
            layout.SUCCESS,
            "absent: the run did not finish (rerun `memorybench qa` with the same overrides to resume)",
        )
    for under in sorted(folders):  # the pack's own marker first
        record = _marker_record(ctx, out, under)
        if record is not None:
            _check_closed(ctx, out, under, record, present)


def _marker_record(ctx: Context, out: Findings, under: str) -> Success | None:
    """The marker's record; None (with a finding, except for a later stage) when it holds none."""
    marker = success.marker_path(under)
    try:
        record = success.parse_success((ctx.root / marker).read_bytes())
    except UnicodeDecodeError as e:
        out.add("json", marker, f"not UTF-8 ({e.reason} at byte {e.start}); a _SUCCESS holds a success.v1 record")
        return None
    except SchemaError as e:
        out.add("schema", marker, f"{e}; a _SUCCESS holds a success.v1 record")
        return None
    except ValueError as e:
        out.add("json", marker, f"not valid JSON ({getattr(e, 'msg', e)}); a _SUCCESS holds a success.v1 record")
        return None
    if record is None and not under:
        out.add(
            "success.unhashed",
            marker,
            "empty: the pack was finished before _SUCCESS held content hashes, so its files were not checked against it; "
            "to check them, delete _SUCCESS and rerun the pack's `memorybench qa` command (it keeps every answer and closes "
            "the pack with hashes)",
        )
    # an empty marker under autorater/ is the autorater's own, written before it hashed its files: nothing to check
    return record


def _check_closed(ctx: Context, out: Findings, under: str, record: Success, present: list[str]) -> None:
    marker = success.marker_path(under)
    diff = success.compare(ctx.root, record, under, present)
    for rel in diff.changed:
        out.add(
            "success.hash_mismatch",
            rel,
            f"not the bytes {marker} recorded (sha256 or size): it changed after the pack was finished",
        )
    for rel in diff.missing:
        if not under and rel in REQUIRED_FILES:
            continue  # file.missing says it, with what the file is for
        out.add("success.file_missing", rel, f"gone: {marker} closed it when the pack was finished")
    for rel in diff.unclosed:
        link = " (a symbolic link; a pack holds plain files)" if (ctx.root / rel).is_symlink() else ""
        out.add("success.unclosed_file", rel, f"not closed by {marker}{link}: added after the pack was finished")


# -- files present -------------------------------------------------------------------------


def check_required_files(ctx: Context, out: Findings) -> None:
    for relpath in REQUIRED_FILES:
        if not (ctx.root / relpath).is_file():
            out.add("file.missing", relpath, "missing; every finished pack has it")


def check_partial_files(ctx: Context, out: Findings) -> None:
    for path, relpath in ctx.rel.items():
        if path.name.endswith(".part"):
            out.add("file.partial", relpath, "temporary file of an interrupted write; the pack was not finished cleanly")


def _answerer(ctx: Context) -> tuple[str, Any]:
    """The pack's answerer (run_meta's choice, else the config's) and its registered class (None: unknown here)."""
    answerer = (ctx.meta or {}).get("choices", {}).get("answerer") or ctx.cfg_get("answerer", "name") or "reader"
    return answerer, ANSWERERS.get(answerer) if answerer in ANSWERERS else None


def check_reader_traces_present(ctx: Context, out: Findings) -> None:
    """An answerer that traces every call in one journal (its `traces_file`: the reader's
    reader/traces.jsonl) left that file (the answerer from run_meta, else the config)."""
    answerer, kind = _answerer(ctx)
    traces = getattr(kind, "traces_file", None)
    if traces and not (ctx.root / traces).is_file():
        out.add("file.missing", traces, f"missing; a {answerer} run has one trace per answered question")


def answerer_records(ctx: Context) -> dict[str, type[BaseModel]]:
    """The files of its own the pack's answerer declares (its `records`: path -> record class;
    the imported answerer's `imported/...`), from run_meta: read before the config is."""
    return dict(getattr(_answerer(ctx)[1], "records", None) or {})


def _check_declared(ctx: Context, out: Findings, relpath: str, model: type[BaseModel]) -> None:
    """A file the answerer declares: present, and its record (or every row) of its schema."""
    if not (ctx.root / relpath).is_file():
        out.add("file.missing", relpath, f"missing; a {_answerer(ctx)[0]} pack has it")
    elif relpath.endswith(".jsonl"):
        _read_jsonl_records(ctx, out, relpath, model)
    else:
        data = load_json(ctx, out, relpath)
        if data is not None and not validate(out, relpath, None, data, model):
            ctx.bad_files.add(relpath)


# -- records -------------------------------------------------------------------------------


def load_json(ctx: Context, out: Findings, relpath: str) -> Any:
    """The parsed JSON file, or None (a finding, and the file in `bad_files`)."""
    path = ctx.root / relpath
    try:
        return records.load_json(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        out.add("json", relpath, f"not UTF-8 ({e.reason} at byte {e.start})")
    except ValueError as e:
        msg = getattr(e, "msg", str(e))
        out.add("json", f"{relpath}:{getattr(e, 'lineno', 1)}", f"not valid JSON ({msg})")
    ctx.bad_files.add(relpath)
    return None


def _schema_of(model: type[BaseModel]) -> str:
    return str(model.model_fields["schema_"].default)


def validate(out: Findings, relpath: str, line: int | None, row: Any, model: type[BaseModel] | str | tuple[str, ...]) -> bool:
    """Whether `row` is a record of `model` (or just carries the schema id `model`, or one of
    several ids, newest first); else a finding."""
    expected = model if isinstance(model, (str, tuple)) else _schema_of(model)
    known = expected if isinstance(expected, tuple) else (expected,)
    if not isinstance(row, dict):
        out.grouped("schema", relpath, line, f"a record must be a JSON object, got {type(row).__name__}", "type")
        return False
    got = row.get("schema")
    if got not in known:
        said = " or ".join(repr(k) for k in known)
        out.grouped(
            "schema", relpath, line, f"schema {got!r} is not a known version here; expected {said}", ("version", repr(got))
        )
        return False
    if isinstance(model, (str, tuple)):
        return True
    try:
        model.model_validate(row)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "record"
        out.grouped("schema", relpath, line, f"{expected} record does not match its schema: {loc}: {err['msg']}", ("fields", loc))
        return False
    return True


def _read_json_record(ctx: Context, out: Findings, relpath: str) -> dict[str, Any] | None:
    if not (ctx.root / relpath).is_file():
        ctx.bad_files.add(relpath)
        return None
    data = load_json(ctx, out, relpath)
    if data is None:
        return None
    if not validate(out, relpath, None, data, KNOWN_JSON[relpath]):
        ctx.bad_files.add(relpath)
        return None
    return data


def _jsonl_lines(ctx: Context, out: Findings, relpath: str) -> list[tuple[int, Any]] | None:
    """(line number, parsed value) of every non-blank line; bad lines become findings."""
    path = ctx.root / relpath
    if not path.is_file():
        return None
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        out.add("json", relpath, f"not UTF-8 ({e.reason} at byte {e.start})")
        ctx.bad_files.add(relpath)
        return []
    rows = []
    # split on "\n" only: a JSON string may hold U+2028, which str.splitlines would split on
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, records.load_json(line)))
        except ValueError as e:
            out.grouped("json", relpath, number, f"line is not valid JSON ({getattr(e, 'msg', e)}): a torn or edited row", "line")
            ctx.bad_files.add(relpath)
    return rows


def _read_jsonl_records(ctx: Context, out: Findings, relpath: str, model: type[BaseModel]) -> list[tuple[int, dict[str, Any]]]:
    lines = _jsonl_lines(ctx, out, relpath)
    if lines is None:
        ctx.bad_files.add(relpath)
        return []
    good = []
    for number, row in lines:
        if validate(out, relpath, number, row, model):
            good.append((number, row))
        else:
            ctx.bad_files.add(relpath)
    return good


def check_known_records(ctx: Context, out: Findings) -> None:
    """run_meta.json, REFERENCE_PIN.json, metrics.json and the known journals, into the context."""
    ctx.meta = _read_json_record(ctx, out, layout.RUN_META)
    ctx.pin = _read_json_record(ctx, out, "REFERENCE_PIN.json")
    ctx.metrics_doc = _read_json_record(ctx, out, "metrics.json")
    ctx.rows = {relpath: _read_jsonl_records(ctx, out, relpath, model) for relpath, model in KNOWN_JSONL.items()}


def check_other_json(ctx: Context, out: Findings) -> None:
    """Other JSON/JSONL files: the answerer's own (checked against the records it declares),
    else only under the open folders, and every row names its schema."""
    declared = answerer_records(ctx)
    for relpath, model in declared.items():
        _check_declared(ctx, out, relpath, model)
    for relpath in ctx.rel.values():
        if relpath in KNOWN_JSON or relpath in KNOWN_JSONL or relpath in PROVENANCE_RECORDS or relpath.startswith(NOT_RECORDS):
            continue
        if relpath in declared:
            continue
        if not relpath.endswith((".json", ".jsonl")):
            continue
        if not relpath.startswith(OPEN_FOLDERS):
            out.add(
                "schema",
                relpath,
                f"unknown JSON file: not a record of this pack's schemas, and outside {', '.join(OPEN_FOLDERS)}",
            )
            continue
        if relpath.endswith(".jsonl"):
            rows = _jsonl_lines(ctx, out, relpath) or []
        else:
            data = load_json(ctx, out, relpath)
            rows = [] if data is None else [(None, data)]
        for number, row in rows:
            if not (isinstance(row, dict) and isinstance(row.get("schema"), str) and row["schema"]):
                out.grouped(
                    "schema",
                    relpath,
                    number,
                    "record has no `schema` field; every JSON record of a pack names its schema version",
                    "missing",
                )
