"""The one base of every record memorybench writes to disk, and the schema registry.

A record is a small pydantic model. One that is a file or a journal row of its own
declares its schema id in the class line, and the base gives it a `schema` field (first
in its JSON, fixed to that id) and enters it in the registry:

    class Prediction(Record, schema="prediction.v1"):
        question_id: str

Parts of records (a request inside a trace) derive from `Record` without a schema. A
reader finds the model of any row by its `schema` value (`record_type`), so a pack can
be checked row by row against its schemas (`memorybench verify`). A new field that
changes the meaning of a record gets a new version (`prediction.v2`), never a silent
change. This module imports only pydantic: the lowest layer, usable by every other.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any, ClassVar, Literal, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["Record", "RecordT", "SchemaError", "load_json", "parse_record", "record_type", "schema_ids"]

#: every declared schema id -> its record class
_SCHEMAS: dict[str, type[Record]] = {}
#: the modules that declare the records a pack may hold, by name (imported on first lookup,
#: so that this lowest module imports nothing above it; in order, until one declares the id
#: looked up: every pack's first, an agent's last); a plugin's records register themselves
#: when the plugin is loaded
SCHEMA_MODULES = (
    "memorybench.pack.schemas",
    "memorybench.pack.autorater_schemas",
    "memorybench.pack.provenance_record",
    "memorybench.pack.budget",
    "memorybench.memory._records",
    "memorybench.estimate",
    "memorybench.answer.agent._records",
)
#: the next of SCHEMA_MODULES to import, and whether the plugins are loaded too (all of it)
_next_module = 0
_loaded = False
_LOADING = threading.RLock()

RecordT = TypeVar("RecordT", bound="Record")


def load_json(data: str | bytes) -> Any:
    """`json.loads`, failing with ValueError (as JSON that does not parse does) where a file
    nests deeper than Python's parser can follow: a hostile pack or dataset row of a
    hundred thousand brackets is a bad file, not a RecursionError traceback."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested deeper than Python's parser allows") from None


def jsonl_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line) of every non-blank line of a JSONL file, split on `\\n` only."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            yield number, line


class SchemaError(ValueError):
    """A row whose `schema` is unknown, or that does not validate against its schema."""


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    #: the schema id of this record class (None for parts of records)
    SCHEMA: ClassVar[Optional[str]] = None

    def __init_subclass__(cls, schema: str | None = None, **kwargs: Any) -> None:
        if schema is not None:
            if schema in _SCHEMAS and _SCHEMAS[schema].__qualname__ != cls.__qualname__:
                raise TypeError(f"schema {schema!r} is declared twice: {_SCHEMAS[schema].__qualname__} and {cls.__qualname__}")
            # `schema` goes first: the JSON of every record starts with its schema id
            own = dict(cls.__dict__.get("__annotations__", {}))
            own.pop("schema_", None)
            cls.__annotations__ = {"schema_": Literal[schema], **own}
            cls.schema_ = Field(schema, alias="schema")  # type: ignore[assignment]
            cls.SCHEMA = schema
            _SCHEMAS[schema] = cls
        super().__init_subclass__(**kwargs)

    def dump(self) -> str:
        """Indented JSON (a file of its own), `schema` first, one trailing newline."""
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False) + "\n"


def load_schemas() -> None:
    """Import every module that declares pack records, and the plugins (once)."""
    _load_until(None)


def _load_until(schema: str | None) -> None:
    """Import the modules of SCHEMA_MODULES in order until one declares `schema` (None: all
    of them), then, for an id none declares, the plugins: a pack's rows of the first
    modules' records (`verify`) do not import the Codex harness's."""
    global _next_module, _loaded
    import importlib

    with _LOADING:
        while _next_module < len(SCHEMA_MODULES):
            module = SCHEMA_MODULES[_next_module]
            _next_module += 1
            importlib.import_module(module)
            if schema is not None and schema in _SCHEMAS:
                return
        if not _loaded:
            _loaded = True
            from memorybench.registry import load_plugins

            load_plugins()


def schema_ids() -> list[str]:
    """Every schema id a pack may hold."""
    load_schemas()
    return sorted(_SCHEMAS)


def record_type(schema: str) -> type[Record]:
    """The record class of a schema id; SchemaError for an id no record declares."""
    if schema not in _SCHEMAS:
        _load_until(schema)
    try:
        return _SCHEMAS[schema]
    except KeyError:
        raise SchemaError(f"unknown schema {schema!r}") from None


def parse_record(data: Any, expected: type[RecordT] | None = None) -> RecordT | Record:
    """Validate one row (a decoded JSON object) against the schema it names, or `expected`."""
    if not isinstance(data, dict):
        raise SchemaError(f"a record is a JSON object, not {type(data).__name__}")
    model: type[Record] = expected or record_type(str(data.get("schema")))
    try:
        return model.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(row)"
        raise SchemaError(f"{model.SCHEMA or model.__name__}: {where}: {first.get('msg')}") from None
