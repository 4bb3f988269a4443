"""A record shared by every benchmark that carries one benchmark's own block beside its fields.

`autorater_metrics.json` holds a judge's J, counts and usage for any benchmark; a benchmark
whose figure is its own adds a block of them (LongMemEval's print_qa_metrics.py figures, BEAM's
two profiles), and an import's `reproduction.json` the table of the authors' script. The core
does not know those blocks: each sits under the key the benchmark's module names (`FIELD` of
its `judge_figures` or `importer` module, declared in its record's `blocks`:
`memorybench.benchmark.block_keys`, which imports no benchmark's module), is kept as JSON
in `blocks`, read back through that module's own record, and written after the record's own
fields, so a file keeps its bytes.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_serializer, model_validator

from memorybench.records import Record

__all__ = ["WithBenchmarkBlock"]


class WithBenchmarkBlock(Record):
    #: the benchmarks' own blocks by key, as JSON (`block(key)`); written after the fields, under their keys
    blocks: dict[str, Any] = Field(default_factory=dict, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _lift_blocks(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        names = {n for name, f in cls.model_fields.items() for n in (name, f.alias) if n}
        extra = [key for key in data if key not in names]
        if not extra:
            return data
        from memorybench.benchmark import block_keys  # only a file with a block asks the benchmarks

        if any(key not in block_keys() for key in extra):
            return data  # a key no benchmark declares: the record's one-line "extra inputs" error names it
        data = dict(data)
        blocks = dict(data.pop("blocks", None) or {})
        for key in extra:
            value = data.pop(key)
            if value is not None:
                blocks[key] = value.model_dump(mode="json", by_alias=True) if isinstance(value, BaseModel) else value
        return {**data, "blocks": blocks}

    def block(self, key: str) -> dict[str, Any] | None:
        """The block a benchmark's module wrote under `key` (its `FIELD`), None without one."""
        return self.blocks.get(key)

    @model_serializer(mode="wrap")
    def _with_blocks(self, handler: Any) -> dict[str, Any]:
        data = {key: value for key, value in handler(self).items() if value is not None or key not in self.omitted_when_null()}
        return {**data, **self.blocks}

    @classmethod
    def omitted_when_null(cls) -> tuple[str, ...]:
        """Fields left out of the JSON while null (a LoCoMo file keeps the bytes it always had)."""
        return ()
