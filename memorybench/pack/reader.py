"""Read a pack the way it was written: typed records from a local folder or `gs://`.

    pack = PackReader.open("outputs/packs/default/runs/<run_id>")   # or gs://bucket/p/name/runs/<id>
    meta = pack.meta()                     # RunMeta
    for p in pack.predictions(): ...       # Prediction, in file order
    pack.records(layout.LINEAGE)           # any journal, each row validated against its schema
    pack.judges()                          # ids of the finished judges: ["mem0-gpt-4o-mini-1a2b3c4d", ...]
    pack.autorater_metrics(judge_id)       # AutoraterMetrics of one judge, or None before it ran
    pack.table(layout.PREDICTIONS, schema) # chosen fields of a journal as an Arrow table (aggregate)

Rows are framed by `\\n` only: journals write U+2028 and other Unicode line separators
raw inside JSON strings, and `str.splitlines()` would cut such a row in two. A row that
is not JSON, or that does not validate against its schema, is a one-line `PackError`
naming the file and line and the command that says more (`memorybench verify`).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from memorybench.errors import UserError
from memorybench.fs import LinkRefused, NotRegular, read_regular
from memorybench.pack import layout
from memorybench.pack.schemas import Metrics, MetricsV2, Prediction, ReaderTrace, RunMeta
from memorybench.records import Record, SchemaError, jsonl_lines, load_json, parse_record
from memorybench.storage import LocalStorage, Storage, StorageNotFound, open_uri
from memorybench.storage._base import clean_relpath

if TYPE_CHECKING:
    import pyarrow as pa  # imported only by `table`

    # a judge's records: imported by the methods that read them (`show` of an unjudged pack reads none)
    from memorybench.pack.autorater_schemas import AutoraterMeta, AutoraterMetrics, AutoraterVerdict, JudgeTrace

T = TypeVar("T", bound=Record)

#: the id of a flat-layout judge without a meta file to name it
LEGACY_JUDGE = "legacy"


class PackError(UserError):
    """A pack file that is missing, not JSON, or not of its schema."""


class PackReader:
    """One pack, read through the storage interface (a local folder or a bucket prefix)."""

    #: what the tree is, in error lines (a subclass reads another tree the same way)
    KIND = "a pack"

    def __init__(self, storage: Storage, relpath: str = "") -> None:
        self.storage = storage
        self.relpath = relpath.strip("/")
        self._legacy: str | None = None
        self._legacy_read = False

    @classmethod
    def open(cls, location: str | os.PathLike[str] | PackReader) -> PackReader:
        """A local pack folder or a `gs://bucket/prefix/<name>/runs/<run_id>` URI (a reader: itself)."""
        if isinstance(location, PackReader):
            return location
        from memorybench.pack.find import resolve_pack  # an experiment folder with one pack, `latest`

        text = str(resolve_pack(location, refuse_several=False))
        if "://" not in text:
            root = Path(text).expanduser()
            if root.is_file():
                raise PackError(f"{root} is a file, not a folder; pass a pack folder <packs>/<name>/runs/<run_id>")
            if not root.is_dir():
                raise PackError(f"pack folder {root} does not exist; pass <packs>/<name>/runs/<run_id>")
            return cls(LocalStorage(str(root.resolve())))
        storage, relpath = open_uri(text)
        return cls(storage, relpath)

    # -- where -----------------------------------------------------------------------
    def _key(self, relpath: str) -> str:
        return f"{self.relpath}/{relpath}" if self.relpath else relpath

    def uri(self, relpath: str = "") -> str:
        return self.storage.uri(self._key(relpath)) if relpath else self.storage.uri(self.relpath)

    @property
    def name(self) -> str:
        """The pack folder's own name (its run id, as `<name>/runs/<run_id>` lays it out)."""
        return self.uri().rstrip("/").rsplit("/", 1)[-1]

    @property
    def local_root(self) -> Path | None:
        """The pack's folder on this machine; None for a pack in a bucket."""
        return self.storage.local_path(self.relpath)

    # -- raw files -------------------------------------------------------------------
    def exists(self, relpath: str) -> bool:
        return self.storage.exists(self._key(relpath))

    def is_complete(self) -> bool:
        return self.exists(layout.SUCCESS)

    def files(self) -> list[str]:
        """Every file of the pack, relative to it, sorted."""
        prefix = f"{self.relpath}/" if self.relpath else ""
        return [key[len(prefix) :] for key in self.storage.list(prefix)]

    def read_bytes(self, relpath: str) -> bytes:
        """A file of the pack. Of a local pack, read without following a link anywhere between
        the pack's folder and the file, and only a regular file: a pack received from someone
        else may hold a link to a host file, which no reader (show, view, blame, report,
        aggregate, compare, collect) may read through; writers never make links."""
        root = self.local_root
        if root is not None:
            return self._read_local(root, relpath)
        try:
            return self.storage.read_bytes(self._key(relpath))
        except (StorageNotFound, FileNotFoundError):
            raise PackError(f"{self.uri(relpath)} does not exist; is {self.uri()} a finished pack?") from None

    def _read_local(self, root: Path, relpath: str) -> bytes:
        missing = PackError(f"{self.uri(relpath)} does not exist; {self._missing_hint()}")
        try:
            return read_regular(root, clean_relpath(relpath))  # O_NOFOLLOW, component by component
        except LinkRefused as e:
            raise PackError(
                f"{self.uri(relpath)}: {e.where} is a link; {self.KIND}'s files are its own, never links (one from "
                f"elsewhere may point at a host file), so it is not read: remove the link, and {self._check_hint()}"
            ) from None
        except NotRegular:
            raise PackError(
                f"{self.uri(relpath)} is not a regular file (a folder, a FIFO or a device); {self._check_hint()}"
            ) from None
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, ValueError):
            raise missing from None
        except OSError as e:
            raise PackError(f"{self.uri(relpath)} cannot be read ({e.strerror}); check the pack's permissions") from None

    def _check_hint(self) -> str:
        """What to run on a tree whose file was refused (a pack: verify it)."""
        return f"run `memorybench verify` on {self.uri()}"

    def _missing_hint(self) -> str:
        return f"is {self.uri()} a finished pack?"

    def read_text(self, relpath: str) -> str:
        return self.read_bytes(relpath).decode("utf-8")

    def json(self, relpath: str) -> Any:
        try:
            return load_json(self.read_bytes(relpath))
        except ValueError:
            raise PackError(f"{self.uri(relpath)} is not valid JSON; run `memorybench verify` on the pack") from None

    def json_object(self, relpath: str) -> dict[str, Any]:
        """A JSON file that must hold an object (run_meta.json, metrics.json: every record file)."""
        data = self.json(relpath)
        if not isinstance(data, dict):
            raise PackError(
                f"{self.uri(relpath)} holds a JSON {type(data).__name__}, not an object; run `memorybench verify` on the pack"
            )
        return data

    def rows(self, relpath: str, *, missing_ok: bool = True) -> Iterator[dict[str, Any]]:
        """The decoded rows of a JSONL file (none when it is absent and `missing_ok`)."""
        if missing_ok and not self.exists(relpath):
            return
        for number, line in jsonl_lines(self.read_bytes(relpath)):
            try:
                yield load_json(line)
            except ValueError:
                raise PackError(
                    f"{self.uri(relpath)} line {number} is not valid JSON; run `memorybench verify` on the pack"
                ) from None

    # -- typed records -----------------------------------------------------------------
    def record(self, relpath: str, model: type[T]) -> T:
        """One JSON file as its record."""
        try:
            return model.model_validate(self.json(relpath))
        except ValidationError as e:  # one line, naming the file and the first bad field
            first = e.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "(file)"
            raise PackError(f"{self.uri(relpath)}: {where}: {first.get('msg')}; run `memorybench verify` on the pack") from None

    def records(self, relpath: str, model: type[T] | None = None, *, missing_ok: bool = True) -> Iterator[T]:
        """Every row of a journal as the record its `schema` names (or `model`)."""
        if missing_ok and not self.exists(relpath):
            return
        for number, line in jsonl_lines(self.read_bytes(relpath)):
            try:
                yield parse_record(load_json(line), model)  # type: ignore[misc]
            except ValueError as e:  # json's and SchemaError
                detail = str(e) if isinstance(e, SchemaError) else "not valid JSON"
                raise PackError(f"{self.uri(relpath)} line {number}: {detail}; run `memorybench verify` on the pack") from None

    def table(self, relpath: str, schema: pa.Schema) -> pa.Table:
        """The fields of `schema` from every row of a JSONL file, as one Arrow table (columnar,
        for many packs at once); other fields are ignored, an absent or empty file has no rows."""
        import pyarrow.json as pa_json

        data = self.read_bytes(relpath) if self.exists(relpath) else b""
        if not data.strip():
            return schema.empty_table()
        try:
            return pa_json.read_json(
                io.BytesIO(data),
                read_options=pa_json.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1)),
                parse_options=pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
            )
        except ValueError as e:  # pyarrow's ArrowInvalid
            detail = " ".join(str(e).split())[:200]
            raise PackError(f"{self.uri(relpath)}: {detail}; run `memorybench verify` on the pack") from None

    def meta(self) -> RunMeta:
        return self.record(layout.RUN_META, RunMeta)

    def metrics(self) -> Metrics | MetricsV2:
        """metrics.json as its record: metrics.v2, or the metrics.v1 of an older pack (both read
        their figures alike: `schemas.ScoresReading`)."""
        schema = self.json_object(layout.METRICS).get("schema")
        return self.record(layout.METRICS, Metrics if schema == "metrics.v1" else MetricsV2)

    def predictions(self) -> list[Prediction]:
        return list(self.records(layout.PREDICTIONS, Prediction, missing_ok=False))

    def traces(self) -> list[ReaderTrace]:
        """The reader's traces (none for an agent's pack)."""
        return list(self.records(layout.READER_TRACES, ReaderTrace))

    # -- the autorater's judges (a later stage: each may be absent) -----------------------
    # One folder per judge, `autorater/<judge id>/` (layout.autorater_file). A pack judged
    # before judges had folders keeps its files flat in `autorater/` (autorater_meta.v1):
    # that is one judge, its id computed from its meta as a new judge's is (`legacy` when
    # it has no meta), so the same judge has the same id in either layout. Where a judge
    # folder and the flat files name the same id, the folder is read.
    def _legacy_judge(self) -> str | None:
        """The flat layout's judge id, or None when the pack has no flat autorater files."""
        if not self._legacy_read:  # the flat layout is never written again: look once
            names = (layout.JUDGE_META, layout.JUDGE_METRICS, layout.JUDGE_VERDICTS, layout.SUCCESS)
            flat = [layout.legacy_autorater_file(n) for n in names]
            present = [rel for rel in flat if self.exists(rel)]
            meta_rel = layout.legacy_autorater_file(layout.JUDGE_META)
            if present:
                self._legacy = self._read_meta(meta_rel).judge_id if meta_rel in present else LEGACY_JUDGE
            self._legacy_read = True
        return self._legacy

    def _read_meta(self, relpath: str) -> AutoraterMeta:
        from memorybench.pack.autorater_schemas import AutoraterMeta, AutoraterMetaV1

        data = self.json(relpath)
        # a flat-layout meta (v1) is read as the current record, its identity computed from it
        if isinstance(data, dict) and data.get("schema") == AutoraterMetaV1.SCHEMA:
            return self.record(relpath, AutoraterMetaV1).upgrade()
        return self.record(relpath, AutoraterMeta)

    def judge_path(self, judge_id: str, name: str) -> str:
        """Where one judge's file `name` (layout.JUDGE_METRICS, layout.SUCCESS, ...) is, relative
        to the pack: in its folder, or flat for the flat layout's judge (when no folder of the
        same id was started: a folder with a meta is read before the flat files)."""
        if judge_id == self._legacy_judge() and not self.exists(layout.autorater_file(judge_id, layout.JUDGE_META)):
            return layout.legacy_autorater_file(name)
        return layout.autorater_file(judge_id, name)

    def judges(self) -> list[str]:
        """The ids of the judges whose folder is finished (has its `_SUCCESS`), sorted."""
        found = set()
        for key in self.storage.list(self._key(layout.AUTORATER) + "/"):
            rel = key[len(self.relpath) + 1 :] if self.relpath else key
            judge = layout.judge_of(rel)
            if judge is not None and rel == layout.autorater_file(judge, layout.SUCCESS):
                found.add(judge)
        legacy = self._legacy_judge()
        if legacy is not None and self.exists(self.judge_path(legacy, layout.SUCCESS)):
            found.add(legacy)
        return sorted(found)

    def only_judge(self) -> str | None:
        """The pack's finished judge for readers that show one J: None without one; with
        several, the first in sorted order (until such readers show J per judge id)."""
        judges = self.judges()
        return judges[0] if judges else None

    def autorater_done(self, judge_id: str) -> bool:
        return self.exists(self.judge_path(judge_id, layout.SUCCESS))

    def autorater_meta(self, judge_id: str) -> AutoraterMeta | None:
        relpath = self.judge_path(judge_id, layout.JUDGE_META)
        return self._read_meta(relpath) if self.exists(relpath) else None

    def autorater_metrics(self, judge_id: str) -> AutoraterMetrics | None:
        from memorybench.pack.autorater_schemas import AutoraterMetrics

        relpath = self.judge_path(judge_id, layout.JUDGE_METRICS)
        return self.record(relpath, AutoraterMetrics) if self.exists(relpath) else None

    def verdicts(self, judge_id: str) -> list[AutoraterVerdict]:
        from memorybench.pack.autorater_schemas import AutoraterVerdict

        return list(self.records(self.judge_path(judge_id, layout.JUDGE_VERDICTS), AutoraterVerdict))

    def judge_traces(self, judge_id: str) -> list[JudgeTrace]:
        from memorybench.pack.autorater_schemas import JudgeTrace

        return list(self.records(self.judge_path(judge_id, layout.JUDGE_TRACES), JudgeTrace))


__all__ = ["LEGACY_JUDGE", "PackError", "PackReader", "jsonl_lines"]
