"""Every row of every record file validates against the schema it names (the schema registry).

The specific checks read the records they rely on; this one walks the rest: every
`*.jsonl` file, row by row, and every `*.json` file whose top-level object has a `schema`
key, each row validated against the record class its `schema` names
(`memorybench.records`). One finding per file names its first bad line. A file that
already has a json or schema finding, or that a specific check validated row by row
against the same classes, is left to that check; files that are not records (agent
workspaces, the judge's response cache) are not read.
"""

from __future__ import annotations

import difflib
from typing import Any

from memorybench.pack.verify.context import KNOWN_JSON, KNOWN_JSONL, NOT_RECORDS, PROVENANCE_RECORDS, Context
from memorybench.pack.verify.findings import Findings
from memorybench.records import SchemaError, jsonl_lines, load_json, parse_record, record_type, schema_ids

__all__ = ["UNDECLARED_SCHEMAS", "check_every_row"]

#: Schema ids a pack may hold that no record class declares: their rows are accepted
#: unchecked. Empty: every record a pack holds is declared (memory/_records.py holds the
#: writer methods' stores); a new id goes here only with a comment naming its file.
UNDECLARED_SCHEMAS: frozenset[str] = frozenset()
#: Files a specific check validates row by row against these same record classes.
_VALIDATED = (
    frozenset(KNOWN_JSONL) | {k for k, v in KNOWN_JSON.items() if not isinstance(v, (str, tuple))} | frozenset(PROVENANCE_RECORDS)
)


def check_every_row(ctx: Context, out: Findings) -> None:
    """Each record file not validated yet: its rows against their schemas, one finding per file."""
    for path, relpath in ctx.rel.items():
        if not relpath.endswith((".json", ".jsonl")) or relpath.startswith(NOT_RECORDS) or relpath in _VALIDATED:
            continue
        if relpath in ctx.bad_files or out.about(relpath, ("json", "schema")):
            continue  # its own finding already says what is wrong
        data = path.read_bytes()
        if relpath.endswith(".jsonl"):
            rows: list[tuple[int | None, bytes]] = list(jsonl_lines(data))
        else:
            rows = [(None, data)]
        first: tuple[int | None, str] | None = None
        bad = 0
        for number, raw in rows:
            try:
                row = load_json(raw)
            except ValueError:
                continue  # not JSON: the json check's finding
            if number is None and not (isinstance(row, dict) and "schema" in row):
                break  # a JSON file that is not a record
            problem = _problem(row)
            if problem is not None:
                bad += 1
                first = first or (number, problem)
        if first is not None:
            number, problem = first
            more = f" ({bad} of {len(rows)} rows do not validate)" if bad > 1 else ""
            out.add("schema", relpath, f"{problem}{more}", number)


def _problem(row: Any) -> str | None:
    """Why a decoded row is not a record of the schema it names, or None."""
    if not isinstance(row, dict):
        return f"a record must be a JSON object, got {type(row).__name__}"
    if "schema" not in row:
        return "record has no `schema` field; every JSON record of a pack names its schema version"
    schema = row["schema"]
    try:
        model = record_type(str(schema))
    except SchemaError:
        if isinstance(schema, str) and schema in UNDECLARED_SCHEMAS:
            return None
        close = difflib.get_close_matches(str(schema), schema_ids(), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"schema {schema!r} is not declared by any record of memorybench{hint}"
    try:
        parse_record(row, model)
    except SchemaError as e:
        return f"record does not match its schema: {e}"
    return None
