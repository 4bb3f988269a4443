"""`verify_pack`: is a pack whole, consistent with its data, and clean?

A pack is trusted only after this walk (DESIGN.md 4.4). It reads the pack's own files,
the dataset file that run_meta names, and nothing else; it calls no model and changes
nothing. Each problem is a `Finding` with a stable `code` (the keys of `CODES`), the file
in the pack (with `:LINE` for a JSONL row) and one line of message.

What is checked:

- every JSON record's `schema` is a known version and the record matches it; unknown
  JSON/JSONL files are accepted only under the open folders (`autorater/`, `agent/`,
  `memory/`) and only when every row carries a `schema` field; a launcher's
  `provenance/cloudrun.json` (a pack a Cloud Run task published) must match its schema
  and name this run: its run id, config sha256 and resolved-config sha256;
- counts: the predictions are exactly the first `question_count` questions of the dataset
  in file order (no duplicate, no gap, `index` = position), and run_meta's
  question_count / questions_total / is_prefix / max_questions agree with the dataset;
  traces, memory manifest and lineage agree with them;
- every recorded hash, recomputed: config (config.resolved.yaml -> run_meta and run id),
  data, prompts, REFERENCE_PIN files, memory files, and each reader message rebuilt from
  its parts (trace and prediction);
- predictions.csv and metrics.json equal a fresh rescore of the stored rows;
- `_SUCCESS` exists and no file of the run is newer than it (`autorater/` is judged
  against `autorater/_SUCCESS` when that exists, since it is added later; predictions.csv
  and metrics.json, which `memorybench rescore` may rewrite, by their content instead);
- no gold string (length >= 4 after strip, case-insensitive) that is not also in that
  conversation's source text (dates, turns, captions; plus the released summaries when
  memory is session_summaries) appears in a reader prompt (minus the question's own
  text), a memory file (dumps, index items, writer input) or an agent workspace file.
  The gold strings are those of every question of the dataset; the run's own prompt
  files count as source text (LoCoMo's adversarial answer "Not mentioned" is also the
  reader template's refusal instruction); a model's reply stored in a memory journal
  (a writer call's `response`) is output, not input, and is not scanned; JSON is scanned
  by its string values only (keys are field names, numbers are counts);
- no secret-looking string (API keys, bearer tokens, private keys, the exact values of
  the credentials given in `secrets`) in any file.

`memorybench verify PACK [PACK...]` is `verify_main`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from memorybench.errors import OneLineParser, UserError
from memorybench.pack.run_pack import SUCCESS
from memorybench.pack.schemas import LineageRow, MemoryManifestRow, Prediction, ReaderTrace, ReferencePin, RunMeta

#: Every finding code, and what it means. Codes are stable: scripts may match on them.
CODES: dict[str, str] = {
    "file.missing": "a file every finished pack has is absent",
    "file.partial": "a temporary *.part file left behind by an interrupted write",
    "json": "a JSON file or a JSONL line does not parse (or is not UTF-8)",
    "schema": "a record's `schema` is not a known version, the record does not match its schema, or a JSON file has no schema",
    "count": "row counts disagree with the dataset or run_meta (question_count, questions_total, is_prefix, max_questions, gaps)",
    "order": "rows are not in the dataset's file order, or a row's `index` is not its position",
    "duplicate.row": "a question, or a conversation's memory, has two rows",
    "row.mismatch": (
        "a prediction row's sample, category, question or gold, or a trace's question slot, differs from the dataset row;"
        " or a prediction is not its reader reply"
    ),
    "hash.config": (
        "config.resolved.yaml does not hash to run_meta.config_sha256 or to the run id,"
        " or a launcher's provenance/ record names another run or config"
    ),
    "hash.data": "the dataset file does not hash to the sha256 run_meta records",
    "data.missing": "the dataset file named in run_meta is not available here (pass --pins), so data checks were skipped",
    "hash.prompt": (
        "a prompts/ file does not hash to run_meta.prompts (or is not recorded),"
        " or a trace names a template or system message the run does not record"
    ),
    "hash.payload": "a rebuilt reader message does not hash to reader_payload_sha256 (trace or prediction row)",
    "hash.reference": "a REFERENCE_PIN file is missing or does not hash to its key, or a trace uses an unpinned ref",
    "hash.memory": "a memory file does not hash to its manifest memory_sha256, or a row names memory its prompt did not use",
    "metrics": "predictions.csv or metrics.json differ from a fresh rescore of the stored rows",
    "success.missing": "_SUCCESS is absent: the run did not finish",
    "success.not_last": "a file is newer than _SUCCESS: the pack changed after it was finished",
    "gold.leak": "a gold string that is not in the conversation's source text appears in a prompt, memory or workspace file (memory that the writer model wrote itself, from inputs scanned clean, may hold it)",
    "secret": "a secret-looking string (API key, token, private key, a credential's value) is stored in the pack",
}

#: Files a finished pack always has (reader/traces.jsonl only when the answerer is the reader).
REQUIRED_FILES = (
    "config.resolved.yaml",
    "run_meta.json",
    "predictions.jsonl",
    "predictions.csv",
    "metrics.json",
    "REFERENCE_PIN.json",
    "TRACE.md",
    "memory/manifest.jsonl",
    "memory/lineage.jsonl",
)
#: Files whose presence makes a folder a pack at all.
PACK_MARKERS = ("run_meta.json", "predictions.jsonl", "config.resolved.yaml", SUCCESS)
KNOWN_JSONL: dict[str, type[BaseModel]] = {
    "predictions.jsonl": Prediction,
    "reader/traces.jsonl": ReaderTrace,
    "memory/lineage.jsonl": LineageRow,
    "memory/manifest.jsonl": MemoryManifestRow,
}
KNOWN_JSON: dict[str, type[BaseModel] | str] = {
    "run_meta.json": RunMeta,
    "REFERENCE_PIN.json": ReferencePin,
    "metrics.json": "metrics.v1",
}
#: Records a launcher adds to a pack it published, checked when present: path -> (module, model).
#: Imported only when the file is there.
PROVENANCE_RECORDS: dict[str, tuple[str, str]] = {
    "provenance/cloudrun.json": ("memorybench.cloudrun_records", "CloudRunProvenance"),
}
#: Folders whose unknown JSON/JSONL files are accepted when every row carries `schema`.
OPEN_FOLDERS = ("autorater/", "agent/", "memory/")
#: The agent's own files: not pack records, so no schema is asked of them (gold is scanned).
WORKSPACES = "agent/workspaces/"
#: Folders of files that are not pack records: workspaces, and the judge's response cache
#: (`judge.cache=true` keeps content-addressed ChatResult files under autorater/cache/).
NOT_RECORDS = (WORKSPACES, "autorater/cache/")
#: Stages that add files to a finished pack later, each with its own marker.
LATER_STAGES = ("autorater/",)
#: Files `memorybench rescore` rewrites on a finished pack at any time: judged by their content
#: (a fresh rescore, the `metrics` check), not by being older than `_SUCCESS`.
RESCORED = ("predictions.csv", "metrics.json")
#: Every writer call of a run: its request is scanned for gold, its reply is model output.
WRITER_CALLS = "memory/writer/calls.jsonl"
#: Folders whose files are scanned for gold strings besides the reader prompts.
GOLD_SCANNED = ("memory/", "writer/", WORKSPACES)
MIN_GOLD_LENGTH = 4
#: Credential values shorter than this are not searched for (they would match anywhere).
MIN_SECRET_LENGTH = 8
_GRAM = 4

#: (what it looks like, pattern, searched in the lowercased bytes, must not follow a letter or digit).
#: Each pattern starts with a literal, so the regex engine scans for it at memchr speed.
_SECRET_PATTERNS: tuple[tuple[str, re.Pattern[bytes], bool, bool], ...] = tuple(
    (kind, re.compile(pattern), lowered, boundary)
    for kind, pattern, lowered, boundary in (
        ("an OpenAI-style API key", rb"sk-[A-Za-z0-9_-]{20,}", False, True),
        ("a bearer token", rb"bearer[ \t]+[a-z0-9._~+/-]{16,}", True, True),
        ("an AWS access key id", rb"(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])", False, True),
        ("an AWS secret access key", rb"aws_secret_access_key[\"']?[ \t]*[:=][ \t]*[\"']?[a-z0-9/+=]{40}", True, False),
        ("a Google API key", rb"AIza[0-9A-Za-z_-]{35}", False, True),
        ("a Google OAuth token", rb"ya29\.[0-9A-Za-z_-]{20,}", False, True),
        ("a private key", rb"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----", False, False),
        ("a GitHub token", rb"gh[pousr]_[A-Za-z0-9]{36,}", False, True),
        ("a GitHub token", rb"github_pat_[A-Za-z0-9_]{22,}", False, True),
        ("a Hugging Face token", rb"hf_[A-Za-z0-9]{30,}", False, True),
        ("a Slack token", rb"xox[abprs]-[A-Za-z0-9-]{10,}", False, True),
    )
)
_ALNUM = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
#: Environment variables whose values are credentials (`verify_main` searches for them).
CREDENTIAL_ENV = re.compile(r"(?:^OPENAI_API_KEY$|_API_KEY$|_TOKEN$|_SECRET$|_SECRET_KEY$|_ACCESS_KEY$|_PASSWORD$)")


@dataclass(frozen=True)
class Finding:
    """One problem in a pack."""

    #: stable code, a key of `CODES`
    code: str
    #: the file in the pack (relative, `/`-separated), with `:LINE` when a row is meant
    path: str
    #: one line: what is wrong and, where it helps, what to do
    message: str

    def format(self, pack_root: Path | None = None) -> str:
        where = f"{pack_root}/{self.path}" if pack_root is not None else self.path
        return f"{self.code} {where}: {self.message}"


def credential_values(environ: dict[str, str] | None = None) -> list[str]:
    """Values of the credential variables present (OPENAI_API_KEY, *_API_KEY, *_TOKEN, ...)."""
    env = os.environ if environ is None else environ
    return sorted({v for k, v in env.items() if CREDENTIAL_ENV.search(k.upper()) and len(v.strip()) >= MIN_SECRET_LENGTH})


def pack_root(path: str | os.PathLike[str]) -> Path:
    """The folder as a pack root; a UserError when it is not a pack at all."""
    root = Path(path).expanduser()
    if not root.exists():
        raise UserError(f"pack folder {root} does not exist; pass a pack folder <packs>/<name>/runs/<run_id>")
    if not root.is_dir():
        raise UserError(f"{root} is a file, not a pack folder; pass a pack folder <packs>/<name>/runs/<run_id>")
    if not any((root / m).exists() for m in PACK_MARKERS):
        runs = sorted(p for p in (root / "runs").glob("*") if p.is_dir()) if (root / "runs").is_dir() else []
        hint = (
            f"; it holds {len(runs)} pack(s) under runs/: pass them (e.g. {root}/runs/*)"
            if runs
            else "; pass a pack folder <packs>/<name>/runs/<run_id>"
        )
        raise UserError(f"{root} is not a pack: it has none of {', '.join(PACK_MARKERS)}{hint}")
    return root.resolve()


def verify_pack(pack_root_: Path, *, pins_dir: str | os.PathLike[str] | None = None, secrets: Iterable[str] = ()) -> list[Finding]:
    """Every finding for one pack (empty: the pack verifies). Raises UserError if it is not a pack."""
    return _Verifier(pack_root(pack_root_), pins_dir, secrets).run()


# -- helpers -----------------------------------------------------------------------------


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _schema_of(model: type[BaseModel]) -> str:
    return str(model.model_fields["schema_"].default)


_GRAMS = re.compile(r"(?=(.{%d}))" % _GRAM, re.DOTALL)


def _grams(text: str) -> frozenset[str]:
    """Every substring of length 4 (a regex findall: faster than slicing in Python)."""
    return frozenset(_GRAMS.findall(text))


def _redact(value: str) -> str:
    return value[:4] + "…" if len(value) > 4 else "…"


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _joint_windows(texts: list[str], reach: int) -> Iterable[str]:
    """At each joint of the concatenated texts, the `reach` characters on either side:
    a needle no longer than reach + 1 that crosses a joint lies inside one of these windows."""
    if reach <= 0:
        return
    for i in range(1, len(texts)):
        left, j = "", i - 1
        while len(left) < reach and j >= 0:
            left = texts[j][max(0, len(texts[j]) - (reach - len(left))) :] + left
            j -= 1
        right, j = "", i
        while len(right) < reach and j < len(texts):
            right += texts[j][: reach - len(right)]
            j += 1
        yield left + right


def _strings(value: Any) -> Iterable[str]:
    """Every string value in a JSON value, depth first.

    Object keys and numbers are left out: they are the record's field names and counts,
    not text a model was given, and a short gold ("sage") would otherwise be found inside
    a key ("messages") of every writer call.
    """
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


_DATASETS: dict[tuple[str, str], Any] = {}


def _load_dataset(path: Path, sha: str) -> Any:
    """load_locomo, cached per (path, sha256): verifying many packs reads the file once."""
    from memorybench.data import load_locomo

    key = (str(path), sha)
    if key not in _DATASETS:
        _DATASETS[key] = load_locomo(path)
    return _DATASETS[key]


def _model_input(request: dict[str, Any]) -> dict[str, Any]:
    """A recorded request as far as it carries text from outside the model: the response
    format (our task schema) and the model's own earlier replies (assistant turns of a
    repair) are left out of the gold scan, as its `response` is."""
    out = {k: v for k, v in request.items() if k != "response_format"}
    if isinstance(out.get("messages"), list):
        out["messages"] = [m for m in out["messages"] if not (isinstance(m, dict) and m.get("role") == "assistant")]
    return out


class _Needles:
    """Gold strings per conversation that must not reach a model, with a fast scan.

    A gold string is a needle for a conversation when it is not in that conversation's
    source text. A scan first keeps the needles whose 4-grams all occur in the text, then
    confirms them with a substring test: a 70 kB memory text against ~1,400 needles takes
    milliseconds, not the ~0.1 s of a plain substring loop.
    """

    def __init__(self, conversations: Sequence[Any], with_summaries: bool, instructions: str = "") -> None:
        """`instructions`: the run's own prompt files (reader template, system message). They are
        fixed, hashed text sent with every question, so a gold that happens to be in them
        ("Not mentioned" is an adversarial answer of LoCoMo and part of the refusal
        instruction) counts as source text rather than a leak."""
        from memorybench.data import iter_questions

        gold_of: dict[str, str] = {}
        for q in iter_questions(conversations):
            for gold in q.gold_strings():
                needle = gold.strip().lower()
                if len(needle) >= MIN_GOLD_LENGTH:
                    gold_of.setdefault(needle, q.question_id)
        self.gold_of = gold_of
        self.maxlen = max((len(n) for n in gold_of), default=0)
        grams = {n: _grams(n) for n in gold_of}
        self.by_sample: dict[str | None, list[tuple[str, frozenset[str]]]] = {}
        absent_everywhere = set(gold_of)
        for c in conversations:
            text = c.text_blob()
            if with_summaries:
                text += "\n" + "\n".join(c.session_summaries[k] for k in sorted(c.session_summaries))
            low = text.lower() + "\n" + instructions.lower()
            text_grams = _grams(low)
            needles = [(n, grams[n]) for n in gold_of if not (grams[n] <= text_grams and n in low)]
            self.by_sample[c.sample_id] = needles
            absent_everywhere &= {n for n, _ in needles}
        #: for a file that belongs to no known conversation: golds in no conversation's text
        self.by_sample[None] = [(n, grams[n]) for n in gold_of if n in absent_everywhere]
        self._cache: dict[tuple[str | None, Any], tuple[str, ...]] = {}

    def sample(self, sample_id: Any) -> str | None:
        return sample_id if isinstance(sample_id, str) and sample_id in self.by_sample else None

    def scan(self, sample_id: str | None, text_lower: str, key: Any = None) -> tuple[str, ...]:
        """The needles of `sample_id` found in `text_lower` (cached by `key`, else by the text)."""
        cache_key = (sample_id, key if key is not None else text_lower)
        hit = self._cache.get(cache_key)
        if hit is None:
            text_grams = _grams(text_lower)
            hit = tuple(n for n, g in self.by_sample[self.sample(sample_id)] if g <= text_grams and n in text_lower)
            self._cache[cache_key] = hit
        return hit


class _Verifier:
    def __init__(self, root: Path, pins_dir: str | os.PathLike[str] | None, secrets: Iterable[str]) -> None:
        self.root = root
        self.pins_dir = pins_dir
        self.secrets = sorted({s for s in secrets if s and len(s.strip()) >= MIN_SECRET_LENGTH})
        self._entries: list[list[Any]] = []  # [code, path, line, message, count]
        self._grouped: dict[tuple[Any, ...], list[Any]] = {}
        self.bad_files: set[str] = set()  # files with json/schema problems: dependent checks skip them

    # -- findings ------------------------------------------------------------------------
    def add(self, code: str, path: str, message: str, line: int | None = None) -> None:
        self._entries.append([code, path, line, message, 1])

    def grouped(self, code: str, path: str, line: int | None, message: str, key: Any) -> None:
        """A per-row finding: the first row is reported, later rows of the same kind counted."""
        entry = self._grouped.get((code, path, key))
        if entry is None:
            entry = [code, path, line, message, 1]
            self._grouped[(code, path, key)] = entry
            self._entries.append(entry)
        else:
            entry[4] += 1

    def findings(self) -> list[Finding]:
        out = []
        for code, path, line, message, count in self._entries:
            if count > 1:
                message += f" (and {count - 1} more like it)"
            out.append(Finding(code, f"{path}:{line}" if line is not None else path, message))
        return out

    # -- walk ----------------------------------------------------------------------------
    def run(self) -> list[Finding]:
        self.files = sorted(p for p in self.root.rglob("*") if p.is_file())
        self.rel = {p: p.relative_to(self.root).as_posix() for p in self.files}
        self._check_success()
        for relpath in REQUIRED_FILES:
            if not (self.root / relpath).is_file():
                self.add("file.missing", relpath, "missing; every finished pack has it")
        for path, relpath in self.rel.items():
            if path.name.endswith(".part"):
                self.add("file.partial", relpath, "temporary file of an interrupted write; the pack was not finished cleanly")

        self.meta = self._read_json_record("run_meta.json")
        self.pin = self._read_json_record("REFERENCE_PIN.json")
        self.metrics_doc = self._read_json_record("metrics.json")
        self.rows = {relpath: self._read_jsonl_records(relpath, model) for relpath, model in KNOWN_JSONL.items()}
        self._check_other_json()

        self.cfg = self._check_config()
        self._check_provenance()
        answerer = (self.meta or {}).get("choices", {}).get("answerer") or self._cfg_get("answerer", "name") or "reader"
        if answerer == "reader" and not (self.root / "reader/traces.jsonl").is_file():
            self.add("file.missing", "reader/traces.jsonl", "missing; a reader run has one trace per answered question")
        self.memory_name = self._cfg_get("memory", "name") or (self.meta or {}).get("choices", {}).get("memory")

        self.conversations = self._load_data()
        self.questions = self._check_counts()
        self.question_text = {q.question_id: q.question for q in self.questions or ()}
        self._check_prompts()
        self.ref_texts = self._check_references()
        self._check_memory()
        self.needles = self._build_needles()
        self.writer_output = self._writer_output()
        self._check_traces()
        self._scan_files_for_gold()
        self._check_metrics()
        self._scan_secrets()
        return self.findings()

    def _cfg_get(self, group: str, key: str) -> Any:
        if self.cfg is None:
            return None
        node = self.cfg.get(group) if hasattr(self.cfg, "get") else None
        return node.get(key) if node is not None and hasattr(node, "get") else None

    # -- _SUCCESS ------------------------------------------------------------------------
    def _check_success(self) -> None:
        marker = self.root / SUCCESS
        if not marker.is_file():
            self.add(
                "success.missing", SUCCESS, "absent: the run did not finish (rerun `memorybench qa` with the same overrides to resume)"
            )
        else:
            self._newer_than(marker, lambda rel: not rel.startswith(LATER_STAGES) and rel not in RESCORED)
        for stage in LATER_STAGES:
            stage_marker = self.root / stage / SUCCESS
            if stage_marker.is_file():
                self._newer_than(stage_marker, lambda rel, stage=stage: rel.startswith(stage))

    def _newer_than(self, marker: Path, judged: Any) -> None:
        limit = marker.stat().st_mtime_ns
        newer = [self.rel[p] for p in self.files if p != marker and judged(self.rel[p]) and p.stat().st_mtime_ns > limit]
        if newer:
            more = f" ({len(newer)} files in all)" if len(newer) > 1 else ""
            marker_rel = marker.relative_to(self.root).as_posix()
            self.add("success.not_last", newer[0], f"modified after {marker_rel}{more}: the pack changed after it was finished")

    # -- JSON ----------------------------------------------------------------------------
    def _load_json(self, relpath: str) -> Any:
        path = self.root / relpath
        try:
            return json.loads(path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError as e:
            self.add("json", relpath, f"not UTF-8 ({e.reason} at byte {e.start})")
        except ValueError as e:
            msg = getattr(e, "msg", str(e))
            self.add("json", f"{relpath}:{getattr(e, 'lineno', 1)}", f"not valid JSON ({msg})")
        self.bad_files.add(relpath)
        return None

    def _read_json_record(self, relpath: str) -> dict[str, Any] | None:
        if not (self.root / relpath).is_file():
            self.bad_files.add(relpath)
            return None
        data = self._load_json(relpath)
        if data is None:
            return None
        expected = KNOWN_JSON[relpath]
        if not self._validate(relpath, None, data, expected):
            self.bad_files.add(relpath)
            return None
        return data

    def _validate(self, relpath: str, line: int | None, row: Any, model: type[BaseModel] | str) -> bool:
        expected = model if isinstance(model, str) else _schema_of(model)
        if not isinstance(row, dict):
            self.grouped("schema", relpath, line, f"a record must be a JSON object, got {type(row).__name__}", "type")
            return False
        got = row.get("schema")
        if got != expected:
            self.grouped(
                "schema", relpath, line, f"schema {got!r} is not a known version here; expected {expected!r}", ("version", repr(got))
            )
            return False
        if isinstance(model, str):
            return True
        try:
            model.model_validate(row)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err["loc"]) or "record"
            self.grouped("schema", relpath, line, f"{expected} record does not match its schema: {loc}: {err['msg']}", ("fields", loc))
            return False
        return True

    def _jsonl_lines(self, relpath: str) -> list[tuple[int, Any]] | None:
        """(line number, parsed value) of every non-blank line; bad lines become findings."""
        path = self.root / relpath
        if not path.is_file():
            return None
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as e:
            self.add("json", relpath, f"not UTF-8 ({e.reason} at byte {e.start})")
            self.bad_files.add(relpath)
            return []
        out = []
        # split on "\n" only: a JSON string may hold U+2028, which str.splitlines would split on
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                out.append((number, json.loads(line)))
            except ValueError as e:
                self.grouped("json", relpath, number, f"line is not valid JSON ({getattr(e, 'msg', e)}): a torn or edited row", "line")
                self.bad_files.add(relpath)
        return out

    def _read_jsonl_records(self, relpath: str, model: type[BaseModel]) -> list[tuple[int, dict[str, Any]]]:
        lines = self._jsonl_lines(relpath)
        if lines is None:
            self.bad_files.add(relpath)
            return []
        good = []
        for number, row in lines:
            if self._validate(relpath, number, row, model):
                good.append((number, row))
            else:
                self.bad_files.add(relpath)
        return good

    def _check_other_json(self) -> None:
        for path, relpath in self.rel.items():
            if relpath in KNOWN_JSON or relpath in KNOWN_JSONL or relpath in PROVENANCE_RECORDS or relpath.startswith(NOT_RECORDS):
                continue
            if not relpath.endswith((".json", ".jsonl")):
                continue
            if not relpath.startswith(OPEN_FOLDERS):
                self.add(
                    "schema", relpath, f"unknown JSON file: not a record of this pack's schemas, and outside {', '.join(OPEN_FOLDERS)}"
                )
                continue
            if relpath.endswith(".jsonl"):
                rows = self._jsonl_lines(relpath) or []
            else:
                data = self._load_json(relpath)
                rows = [] if data is None else [(None, data)]
            for number, row in rows:
                if not (isinstance(row, dict) and isinstance(row.get("schema"), str) and row["schema"]):
                    self.grouped(
                        "schema",
                        relpath,
                        number,
                        "record has no `schema` field; every JSON record of a pack names its schema version",
                        "missing",
                    )

    # -- config and data -----------------------------------------------------------------
    def _check_config(self) -> Any:
        relpath = "config.resolved.yaml"
        if not (self.root / relpath).is_file():
            return None
        from omegaconf import OmegaConf

        from memorybench.run_id import HEX_DIGITS, config_sha256, run_id

        try:
            cfg = OmegaConf.load(self.root / relpath)
            sha, rid = config_sha256(cfg), run_id(cfg)
        except Exception as e:  # noqa: BLE001  (any YAML/OmegaConf failure is this finding)
            self.add("hash.config", relpath, f"cannot be loaded ({' '.join(str(e).split())[:200]})")
            return None
        meta = self.meta
        if meta is None:
            return cfg
        if sha != meta["config_sha256"]:
            self.add(
                "hash.config",
                relpath,
                f"hashes to {sha[:HEX_DIGITS]}…, run_meta.json records config_sha256 {meta['config_sha256'][:HEX_DIGITS]}…",
            )
        if not meta["run_id"].endswith("-" + meta["config_sha256"][:HEX_DIGITS]):
            self.add(
                "hash.config",
                "run_meta.json",
                f"run_id {meta['run_id']!r} does not end with the config sha256's first {HEX_DIGITS} hex digits",
            )
        elif rid != meta["run_id"]:
            self.add("hash.config", relpath, f"gives run id {rid!r}, run_meta.json records {meta['run_id']!r}")
        if cfg.get("max_questions") != meta["max_questions"]:
            self.add(
                "count", "run_meta.json", f"max_questions={meta['max_questions']} but config.resolved.yaml has {cfg.get('max_questions')}"
            )
        return cfg

    def _check_provenance(self) -> None:
        """A launcher's record names this run: its run id, config sha256 and resolved config."""
        import importlib

        for relpath, (module, name) in PROVENANCE_RECORDS.items():
            if not (self.root / relpath).is_file():
                continue
            model: type[BaseModel] = getattr(importlib.import_module(module), name)
            record = self._load_json(relpath)
            if record is None or not self._validate(relpath, None, record, model):
                self.bad_files.add(relpath)
                continue
            if self.meta is not None:
                for field in ("run_id", "config_sha256"):
                    if record[field] != self.meta[field]:
                        self.add("hash.config", relpath, f"{field} {record[field]!r} is not run_meta.json's {self.meta[field]!r}")
            if self.cfg is not None:
                from omegaconf import OmegaConf

                from memorybench.run_id import canonical_json

                resolved = _sha256(canonical_json(OmegaConf.to_container(self.cfg, resolve=True)).encode("utf-8"))
                if record["resolved_sha256"] != resolved:
                    self.add(
                        "hash.config",
                        relpath,
                        f"resolved_sha256 {record['resolved_sha256'][:12]}… is not config.resolved.yaml's {resolved[:12]}…:"
                        " the config the task ran is not the one in the pack",
                    )

    def _load_data(self) -> Any:
        if self.meta is None:
            return None
        from memorybench.data import file_sha256
        from memorybench.data.pins import LOCOMO10
        from memorybench.data.pins import pins_dir as resolve_pins

        data = self.meta.get("data") or {}
        if data.get("pinned"):
            path = resolve_pins(self.pins_dir) / LOCOMO10.relpath
            expected = LOCOMO10.sha256
            if data.get("sha256") != LOCOMO10.sha256:
                self.add(
                    "hash.data",
                    "run_meta.json",
                    f"data.sha256 {str(data.get('sha256'))[:12]}… is not the pinned {LOCOMO10.relpath} ({LOCOMO10.sha256[:12]}…)",
                )
            where = "pass --pins DIR (or set MEMORYBENCH_PINS) to the pins folder, or run `memorybench fetch`"
        else:
            path = Path(str(data.get("path") or ""))
            expected = data.get("sha256")
            where = "put the file back at that path to verify the rows against it"
        if not str(data.get("path") or "") and not data.get("pinned"):
            self.add("data.missing", "run_meta.json", "data.path is empty; counts, rows and gold were not checked")
            return None
        if not path.is_file():
            self.add("data.missing", "run_meta.json", f"dataset file {path} not found; {where}; counts, rows and gold were not checked")
            return None
        actual = file_sha256(path)
        if actual != expected:
            self.add(
                "hash.data",
                "run_meta.json",
                f"dataset file {path} has sha256 {actual[:12]}…, run_meta records {str(expected)[:12]}…;"
                " counts, rows and gold were not checked",
            )
            return None
        try:
            return _load_dataset(path, actual)
        except UserError as e:
            self.add("data.missing", "run_meta.json", f"dataset file {path} cannot be read: {e.message}")
            return None

    # -- counts and order ----------------------------------------------------------------
    def _check_counts(self) -> list[Any] | None:
        if self.conversations is None or self.meta is None:
            return None
        from memorybench.data import iter_questions

        meta = self.meta
        every = list(iter_questions(self.conversations))
        total = len(every)
        max_q = meta["max_questions"]
        expected = every[:max_q] if max_q else every
        n = len(expected)
        if meta["questions_total"] != total:
            self.add("count", "run_meta.json", f"questions_total={meta['questions_total']}, the dataset has {total}")
        if meta["question_count"] != n:
            self.add(
                "count",
                "run_meta.json",
                f"question_count={meta['question_count']}, but max_questions={max_q} over the dataset's {total} questions gives {n}",
            )
        if meta["is_prefix"] != (n < total):
            self.add(
                "count",
                "run_meta.json",
                f"is_prefix={meta['is_prefix']} but {n} of {total} questions is {'' if n < total else 'not '}a prefix",
            )
        if self.metrics_doc is not None:
            if self.metrics_doc.get("questions") != n or self.metrics_doc.get("is_prefix") != (n < total):
                self.add(
                    "count",
                    "metrics.json",
                    f"questions={self.metrics_doc.get('questions')}, is_prefix={self.metrics_doc.get('is_prefix')};"
                    f" the run has {n} questions of {total}",
                )

        ids = [q.question_id for q in expected]
        self._check_sequence("predictions.jsonl", ids, check_index=True)
        by_id = {q.question_id: q for q in expected}
        for line, row in self.rows["predictions.jsonl"]:
            q = by_id.get(row["question_id"])
            if q is None:
                continue
            for field, want in (
                ("sample_id", q.sample_id),
                ("category", q.category),
                ("question", q.question),
                ("gold", q.answer),
                ("adversarial_answer", q.adversarial_answer),
            ):
                got = row.get(field)
                if got != want or type(got) is not type(want):
                    self.grouped(
                        "row.mismatch",
                        "predictions.jsonl",
                        line,
                        f"{field} of {q.question_id} is {got!r}, the dataset row has {want!r}",
                        field,
                    )
        if (self.root / "reader/traces.jsonl").is_file():
            self._check_sequence("reader/traces.jsonl", ids, check_index=False)
        self._check_memory_rows([q.sample_id for q in expected])
        return expected

    def _check_sequence(self, relpath: str, ids: list[str], *, check_index: bool) -> None:
        """Rows are exactly `ids`, in that order: duplicates, strangers, order, gaps."""
        position = {qid: i for i, qid in enumerate(ids)}
        seen: dict[str, int] = {}
        present: list[tuple[int, str]] = []
        for line, row in self.rows[relpath]:
            qid = row["question_id"]
            if qid in seen:
                self.grouped("duplicate.row", relpath, line, f"{qid} already has a row at line {seen[qid]}", "dup")
                continue
            seen[qid] = line
            if qid not in position:
                self.grouped(
                    "count",
                    relpath,
                    line,
                    f"{qid} is not among the run's {len(ids)} questions (the first {len(ids)} in file order)",
                    "stranger",
                )
                continue
            if check_index and row.get("index") != position[qid]:
                self.grouped(
                    "order", relpath, line, f"{qid} has index {row.get('index')}, its position in file order is {position[qid]}", "index"
                )
            present.append((line, qid))
        for (_, before), (line, qid) in zip(present, present[1:]):
            if position[qid] < position[before]:
                self.add("order", relpath, f"{qid} comes after {before}, but is earlier in the dataset's file order", line)
                break
        if relpath in self.bad_files:
            return  # rows that did not parse are already findings; gaps would repeat them
        missing = [qid for qid in ids if qid not in seen]
        if missing:
            self.add(
                "count",
                relpath,
                f"{len(missing)} of the run's {len(ids)} questions have no row (first: {missing[0]}); "
                f"{'rerun `memorybench qa` to resume' if not (self.root / SUCCESS).exists() else 'rows were lost'}",
            )

    def _check_memory_rows(self, question_samples: list[str]) -> None:
        samples = list(dict.fromkeys(question_samples))
        manifest = self.rows["memory/manifest.jsonl"]
        seen: dict[str, int] = {}
        for line, row in manifest:
            sid = row["sample_id"]
            if sid in seen:
                self.grouped(
                    "duplicate.row", "memory/manifest.jsonl", line, f"memory of {sid} already has a manifest row at line {seen[sid]}", "dup"
                )
                continue
            seen[sid] = line
            if sid not in samples:
                self.grouped(
                    "count", "memory/manifest.jsonl", line, f"memory of {sid} was built but none of its questions is in the run", "stranger"
                )
        if "memory/manifest.jsonl" not in self.bad_files:
            missing = [s for s in samples if s not in seen]
            if missing:
                self.add(
                    "count", "memory/manifest.jsonl", f"no manifest row for {len(missing)} conversation(s) of the run (first: {missing[0]})"
                )
        lineage_counts: dict[str, int] = {}
        for line, row in self.rows["memory/lineage.jsonl"]:
            lineage_counts[row["sample_id"]] = lineage_counts.get(row["sample_id"], 0) + 1
            if row["sample_id"] not in seen:
                self.grouped(
                    "count", "memory/lineage.jsonl", line, f"lineage row of {row['sample_id']}, which has no manifest row", "stranger"
                )
        if "memory/lineage.jsonl" in self.bad_files:
            return
        for line, row in manifest:
            got = lineage_counts.get(row["sample_id"], 0)
            if row["item_count"] != got and seen.get(row["sample_id"]) == line:
                self.grouped(
                    "count",
                    "memory/manifest.jsonl",
                    line,
                    f"item_count={row['item_count']} for {row['sample_id']}, memory/lineage.jsonl has {got} rows",
                    "items",
                )

    # -- hashes ----------------------------------------------------------------------------
    def _check_prompts(self) -> None:
        self.templates: dict[str, str] = {}  # relpath under prompts/ -> text, for files that hash right
        if self.meta is None:
            return
        recorded: dict[str, str] = self.meta["prompts"]
        for relpath, sha in recorded.items():
            path = self._inside(f"prompts/{relpath}")
            if path is None:
                self.add("hash.prompt", "run_meta.json", f"prompt {relpath!r} points outside the pack")
                continue
            if not path.is_file():
                self.add("hash.prompt", f"prompts/{relpath}", "missing; run_meta.json records its sha256")
                continue
            data = path.read_bytes()
            if _sha256(data) != sha:
                self.add(
                    "hash.prompt",
                    f"prompts/{relpath}",
                    f"hashes to {_sha256(data)[:12]}…, run_meta.json records {sha[:12]}…: the prompt was changed",
                )
                # the project's own copy, when it is the recorded one, still lets the messages be rebuilt
                data = self._project_prompt(relpath, sha)
                if data is None:
                    continue
            self.templates[relpath] = data.decode("utf-8", errors="replace")
        for path, rel in self.rel.items():
            if rel.startswith("prompts/") and rel[len("prompts/") :] not in recorded:
                self.add("hash.prompt", rel, "a prompt file that run_meta.json does not record")

    def _inside(self, relpath: str) -> Path | None:
        """The file a recorded relative path names, or None when it would leave the pack."""
        path = (self.root / relpath).resolve()
        return path if path.is_relative_to(self.root) else None

    @staticmethod
    def _project_prompt(relpath: str, sha: str) -> bytes | None:
        from memorybench import PROMPTS_DIR

        path = PROMPTS_DIR / relpath
        data = path.read_bytes() if path.is_file() else None
        return data if data is not None and _sha256(data) == sha else None

    def _check_references(self) -> dict[str, str]:
        """sha256 -> text of every REFERENCE_PIN entry whose file hashes to its key."""
        texts: dict[str, str] = {}
        if self.pin is None:
            return texts
        for sha, ref in self.pin["refs"].items():
            path = self._inside(ref["path"])
            if path is None:
                self.add("hash.reference", "REFERENCE_PIN.json", f"ref {sha[:12]}… points outside the pack ({ref['path']!r})")
                continue
            if not path.is_file():
                self.add("hash.reference", "REFERENCE_PIN.json", f"{ref['path']} (ref {sha[:12]}…) is missing")
                continue
            data = path.read_bytes()
            if _sha256(data) != sha:
                self.add(
                    "hash.reference",
                    ref["path"],
                    f"hashes to {_sha256(data)[:12]}…, REFERENCE_PIN.json maps ref {sha[:12]}… to it: the file or the pin was changed",
                )
                continue
            if len(data) != ref["bytes"]:
                self.add("hash.reference", "REFERENCE_PIN.json", f"{ref['path']} has {len(data)} bytes, the pin records {ref['bytes']}")
            texts[sha] = data.decode("utf-8")
        return texts

    def _check_memory(self) -> None:
        self.dump_samples: dict[str, str] = {}  # memory file -> sample id
        self.manifest_sha: dict[str, str] = {}  # sample id -> question-independent memory sha256
        for line, row in self.rows["memory/manifest.jsonl"]:
            if row.get("memory_path"):
                self.dump_samples[row["memory_path"]] = row["sample_id"]
            if row.get("memory_sha256"):
                self.manifest_sha.setdefault(row["sample_id"], row["memory_sha256"])
            if not (row.get("memory_sha256") and row.get("memory_path")):
                continue
            path = self._inside(row["memory_path"])
            if path is None:
                self.add("hash.memory", "memory/manifest.jsonl", f"memory_path {row['memory_path']!r} points outside the pack", line)
            elif not path.is_file():
                self.add("hash.memory", "memory/manifest.jsonl", f"{row['memory_path']} (memory of {row['sample_id']}) is missing", line)
            elif _sha256(path.read_bytes()) != row["memory_sha256"]:
                self.add(
                    "hash.memory",
                    row["memory_path"],
                    f"does not hash to the manifest's memory_sha256 {row['memory_sha256'][:12]}… (memory/manifest.jsonl line {line})",
                )
        for line, row in self.rows["predictions.jsonl"]:
            want = self.manifest_sha.get(row["sample_id"])
            if want is not None and row["memory_sha256"] != want:
                self.grouped(
                    "hash.memory",
                    "predictions.jsonl",
                    line,
                    f"memory_sha256 of {row['question_id']} is not its conversation's memory in memory/manifest.jsonl",
                    "manifest",
                )

    def _build_needles(self) -> _Needles | None:
        if self.conversations is None:
            return None
        instructions = "\n".join(self.templates[k] for k in sorted(self.templates))
        return _Needles(self.conversations, with_summaries=self.memory_name == "session_summaries", instructions=instructions)

    def _check_traces(self) -> None:
        """Rebuild each reader message from its template and slots: payload hashes, memory, gold."""
        relpath = "reader/traces.jsonl"
        traces = self.rows[relpath]
        if not traces:
            return
        predictions = {row["question_id"]: (number, row) for number, row in self.rows["predictions.jsonl"]}
        questions = {q.question_id: q for q in self.questions} if self.questions is not None else {}
        recorded = (self.meta or {}).get("prompts", {})
        system = self.templates.get("system.txt")
        lowered_refs: dict[Any, str] = {}
        self._prefix_hashes: dict[tuple[str, Any], Any] = {}

        def memory_key_of(request: dict[str, Any]) -> Any:
            ref = request["slots"]["memory"].get("ref")
            return ("ref", ref) if ref else None

        for line, trace in traces:
            qid = trace["question_id"]
            request = trace["request"]
            template = self.templates.get(request["template"])
            if self.meta is not None and recorded.get(request["template"]) != request["template_sha256"]:
                self.grouped(
                    "hash.prompt",
                    relpath,
                    line,
                    f"template {request['template']} (sha256 {request['template_sha256'][:12]}…) is not a prompt run_meta.json records",
                    "template",
                )
                template = None
            if system is not None and request["system"] != system:
                self.grouped("hash.prompt", relpath, line, "the system message is not prompts/system.txt", "system")

            # slot values: inline text, or a ref that REFERENCE_PIN.json resolves
            values: dict[str, str | None] = {}
            refs: list[str] = []
            for name, slot in request["slots"].items():
                if slot.get("ref") is not None:
                    refs.append(slot["ref"])
                    if self.pin is not None and slot["ref"] not in self.pin["refs"]:
                        self.grouped(
                            "hash.reference",
                            relpath,
                            line,
                            f"slot {name} refers to {slot['ref'][:12]}…, which REFERENCE_PIN.json does not pin",
                            "unpinned",
                        )
                    values[name] = self.ref_texts.get(slot["ref"])
                else:
                    values[name] = slot.get("text")
            if set(values) != {"memory", "question"}:
                self.grouped("schema", relpath, line, f"reader slots are {sorted(values)}, expected ['memory', 'question']", "slots")
                continue
            memory, asked = values["memory"], values["question"]
            source = questions.get(qid)
            if source is not None and asked is not None and asked != source.question:
                self.grouped("row.mismatch", relpath, line, f"the question slot of {qid} is not the dataset's question text", "question")

            prediction_line, prediction = predictions.get(qid, (None, None))
            if prediction is not None:
                if prediction.get("reader_payload_sha256") != trace["reader_payload_sha256"]:
                    self.grouped(
                        "hash.payload",
                        "predictions.jsonl",
                        prediction_line,
                        f"reader_payload_sha256 of {qid} differs from its trace (reader/traces.jsonl line {line})",
                        "prediction",
                    )
                reply = trace["response"].get("text")
                if isinstance(reply, str) and prediction["prediction"] != reply.strip():
                    self.grouped(
                        "row.mismatch",
                        "predictions.jsonl",
                        prediction_line,
                        f"prediction of {qid} is not its reader reply, stripped (reader/traces.jsonl line {line})",
                        "reply",
                    )
                if refs and prediction["memory_sha256"] not in refs:
                    self.grouped(
                        "hash.memory",
                        relpath,
                        line,
                        f"the prompt of {qid} used memory {refs[0][:12]}…,"
                        f" its prediction row names {prediction['memory_sha256'][:12]}…",
                        "prompt",
                    )
            if template is None or memory is None or asked is None:
                continue  # the prompt file or a reference is already a finding: nothing to rebuild from
            if self._payload_sha256(template, memory, memory_key_of(request), asked) != trace["reader_payload_sha256"]:
                self.grouped(
                    "hash.payload",
                    relpath,
                    line,
                    f"the user message of {qid} rebuilt from prompts/{request['template']} and its slots"
                    " does not hash to its reader_payload_sha256",
                    "trace",
                )

            if self.needles is None:
                continue
            # the message as segments (the memory scanned once per ref), the question's own text removed:
            # a question may name another question's gold
            sample = self.needles.sample(trace["sample_id"])
            own = (source.question if source is not None else asked).lower()
            before, _, after = template.partition("{memory}")
            memory_key = memory_key_of(request)
            low_memory = lowered_refs.get(memory_key) if memory_key else None
            if low_memory is None:
                low_memory = memory.lower()
                if memory_key:
                    lowered_refs[memory_key] = low_memory
            segments = [
                (before.replace("{question}", asked).lower().replace(own, "\x00"), None),
                (low_memory, memory_key),
                (after.replace("{question}", asked).lower().replace(own, "\x00"), None),
            ]
            self._gold_in_segments(sample, segments, relpath, line, f"the reader prompt of {qid}")

    def _payload_sha256(self, template: str, memory: str, memory_key: Any, question: str) -> str:
        """sha256 of `fill_template(template, memory, question)`, the shared prefix hashed once.

        The message is (template before {memory}, question filled) + memory + (the rest,
        question filled); the hash state after the first two parts is kept per memory ref,
        so 1,986 prompts of 70 kB do not mean 140 MB hashed.
        """
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

    def _gold_in_segments(self, sample: str | None, segments: list[tuple[str, Any]], relpath: str, line: int | None, what: str) -> None:
        """Scan a text made of segments (each cached) and the windows across their joints."""
        assert self.needles is not None
        hits: set[str] = set()
        for text, key in segments:
            hits.update(self.needles.scan(sample, text, key))
        texts = [t for t, _ in segments]
        for window in _joint_windows(texts, self.needles.maxlen - 1):
            hits.update(self.needles.scan(sample, window))
        for needle in sorted(hits):
            self._gold_finding(sample, needle, relpath, line, what)

    def _writer_output(self) -> dict[str | None, list[tuple[int, str]]]:
        """Per sample id, (line number, lowercased reply) of its writer calls (memory/writer/calls.jsonl)."""
        path = self.root / WRITER_CALLS
        out: dict[str | None, list[tuple[int, str]]] = {}
        if self.needles is None or not path.is_file():
            return {}
        for number, line in enumerate(path.read_text("utf-8", errors="replace").split("\n"), start=1):
            try:
                row = json.loads(line)
                text = row["response"]["text"]
            except (ValueError, KeyError, TypeError):
                continue  # a torn or malformed row is the schema check's finding
            if isinstance(text, str):
                out.setdefault(self.needles.sample(row.get("sample_id")), []).append((number, text.lower()))
        return out

    def _written_by_the_writer(self, sample: str | None, needle: str, before_line: int | None = None) -> bool:
        """Whether a reply of the writer for `sample` (before call line `before_line`, if given) holds `needle`."""
        return any(needle in text for number, text in self.writer_output.get(sample, ())
                   if before_line is None or number < before_line)

    def _gold_finding(self, sample: str | None, needle: str, relpath: str, line: int | None, what: str) -> None:
        assert self.needles is not None
        if relpath != WRITER_CALLS and self._written_by_the_writer(sample, needle):
            # The writer model wrote this string itself (a year, a name): memory made from its
            # replies may hold it by chance. Its inputs are scanned in calls.jsonl, where a gold
            # that reached the writer before the writer ever wrote it is still a finding.
            return
        source = f"{sample}'s source text" if sample else "any conversation's source text"
        self.grouped(
            "gold.leak",
            relpath,
            line,
            f"gold answer {needle!r} of {self.needles.gold_of[needle]} appears in {what}; it is not in {source}",
            ("gold", needle),
        )

    def _scan_files_for_gold(self) -> None:
        """Memory files (dumps, index items, writer input), writer/ and agent workspace files.

        JSON is scanned by its string values only (a gold with a quote is escaped in the raw
        line; keys and numbers are the record's shape, not text a model read), each JSONL row against the needles of its own `sample_id`. A row's
        `response` (a model's reply, e.g. a writer call's) is an output, not an input, and
        is left out: what a model wrote reaches a prompt through the memory files anyway.
        """
        if self.needles is None:
            return
        for path, relpath in self.rel.items():
            if not relpath.startswith(GOLD_SCANNED) or path.name.endswith((".part", ".log")):
                continue  # a local server's log holds load and timing lines (digits), never a prompt
            text = path.read_bytes().decode("utf-8", errors="replace")
            sample, question = self._owner_of(relpath)
            if relpath.endswith(".jsonl"):
                self._gold_in_jsonl(relpath, text, sample)
                continue
            key: Any = ("ref", _sha256(text.encode("utf-8")))  # a dump is also a reader ref: scanned once
            if relpath.endswith(".json"):
                try:
                    text, key = "\n".join(_strings(json.loads(text))), None
                except ValueError:
                    pass
            low = self._without_question(text.lower(), question)
            if question is not None:
                key = None
            for needle in self.needles.scan(sample, low, key):
                at = low.find(needle)
                line = _line_of(low, at) if not relpath.endswith(".json") else None
                self._gold_finding(sample, needle, relpath, line, relpath)

    def _without_question(self, low: str, question_id: str | None) -> str:
        """The text with the question's own text removed (it may name another question's gold)."""
        question = self.question_text.get(question_id) if question_id else None
        return low.replace(question.lower(), "\x00") if question else low

    def _owner_of(self, relpath: str) -> tuple[str | None, str | None]:
        """(sample id, question id) a memory or workspace file belongs to, from the manifest or its path."""
        assert self.needles is not None
        if relpath in self.dump_samples:
            return self.needles.sample(self.dump_samples[relpath]), None
        sample = question = None
        for part in relpath.split("/"):
            stem = part.rsplit(".", 1)[0] if "." in part else part
            match = re.match(r"^(.+)-q-\d+$", stem)
            if match and match.group(1) in self.needles.by_sample:
                sample, question = match.group(1), stem
            elif stem in self.needles.by_sample:
                sample = stem
        return self.needles.sample(sample), question

    def _gold_in_jsonl(self, relpath: str, text: str, file_sample: str | None) -> None:
        """JSONL rows, grouped by their `sample_id` (else the file's), one scan per group."""
        assert self.needles is not None
        groups: dict[str | None, list[tuple[int, str]]] = {}
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                row = line
            sample = file_sample
            if isinstance(row, dict):
                sample = self.needles.sample(row.get("sample_id")) or file_sample
                qid = row.get("question_id") if isinstance(row.get("question_id"), str) else None
                row = {k: v for k, v in row.items() if k != "response"}
                if isinstance(row.get("request"), dict):
                    row["request"] = _model_input(row["request"])
            else:
                qid = None
            low = self._without_question("\n".join(_strings(row)).lower(), qid)
            groups.setdefault(sample, []).append((number, low))
        for sample, lines in groups.items():
            hits = self.needles.scan(sample, "\n".join(low for _, low in lines), ("jsonl", relpath, sample))
            for needle in hits:
                number = next((n for n, low in lines if needle in low), None)
                if relpath == WRITER_CALLS and self._written_by_the_writer(sample, needle, before_line=number):
                    continue  # a later task's input carries an earlier reply (mem0's facts, saved lists)
                self._gold_finding(sample, needle, relpath, number, relpath)

    def _check_metrics(self) -> None:
        if self.meta is None or {"predictions.jsonl", "reader/traces.jsonl"} & self.bad_files:
            return
        if not (self.root / "predictions.jsonl").is_file():
            return
        from memorybench.stages.rescore import compute_scores, predictions_csv

        try:
            rows, metrics = compute_scores(self.root)
        except (UserError, KeyError, TypeError, ValueError) as e:
            self.add("metrics", "predictions.jsonl", f"cannot be rescored ({' '.join(str(e).split())[:200]})")
            return
        csv_path = self.root / "predictions.csv"
        if csv_path.is_file() and csv_path.read_bytes().decode("utf-8", errors="replace") != predictions_csv(rows):
            self.add("metrics", "predictions.csv", "differs from a rescore of predictions.jsonl; run `memorybench rescore` on the pack")
        if self.metrics_doc is not None and self.metrics_doc != json.loads(json.dumps(metrics)):
            changed = sorted(
                k for k in set(metrics) | set(self.metrics_doc) if json.loads(json.dumps(metrics.get(k))) != self.metrics_doc.get(k)
            )
            self.add(
                "metrics",
                "metrics.json",
                f"differs from a rescore of the stored rows ({', '.join(changed)}); run `memorybench rescore` on the pack",
            )

    # -- secrets ---------------------------------------------------------------------------
    def _scan_secrets(self) -> None:
        given = [secret.encode("utf-8") for secret in self.secrets]
        for path, relpath in self.rel.items():
            data = path.read_bytes()
            lowered = data.lower()  # same length and offsets as `data`
            hits: dict[str, int] = {}  # kind -> offset of its first match in this file
            for kind, pattern, use_lowered, boundary in _SECRET_PATTERNS:
                for m in pattern.finditer(lowered if use_lowered else data):
                    if boundary and m.start() > 0 and data[m.start() - 1] in _ALNUM:
                        continue
                    hits.setdefault(kind, m.start())
                    break
            for value in given:
                at = data.find(value)
                if at >= 0:
                    hits.setdefault("the value of a credential variable of this environment", at)
            for kind, at in sorted(hits.items(), key=lambda kv: kv[1]):
                line = data.count(b"\n", 0, at) + 1
                shown = _redact(data[at : at + 8].decode("utf-8", errors="replace"))
                self.add("secret", relpath, f"looks like {kind} ({shown}); remove it from the pack and rotate the credential", line)


# -- command line ----------------------------------------------------------------------------


def verify_main(argv: Sequence[str]) -> int:
    """`memorybench verify PACK [PACK...] [--json] [--pins DIR]`: 0 when every pack verifies, 1 otherwise.

    memorybench/cli.py is owned elsewhere: it wires `memorybench verify` to this function
    (this module does not edit it). A path that is not a pack raises UserError, which the
    CLI prints as one line. Findings print as `CODE path: message`, one per line (stdout);
    `--json` prints a JSON list of {pack, code, path, message} instead. The values of the
    credential variables present (OPENAI_API_KEY, *_API_KEY, *_TOKEN, ...) are searched for.
    """
    parser = OneLineParser(prog="memorybench verify", description="Check packs: schemas, counts, hashes, _SUCCESS, gold leaks, secrets.")
    parser.add_argument("packs", nargs="+", metavar="PACK", help="a pack folder <packs>/<name>/runs/<run_id>")
    parser.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    parser.add_argument("--pins", help="pins folder holding the pinned dataset (default: $MEMORYBENCH_PINS or the user cache dir)")
    ns = parser.parse_args(list(argv))
    roots = [pack_root(p) for p in ns.packs]
    secrets = credential_values()
    results = [(root, verify_pack(root, pins_dir=ns.pins, secrets=secrets)) for root in roots]
    if ns.json:
        print(json.dumps([{"pack": str(root), **asdict(f)} for root, findings in results for f in findings], indent=2, ensure_ascii=False))
    else:
        for root, findings in results:
            for f in findings:
                print(f.format(root))
            if not findings:
                print(f"ok {root}")
    sys.stdout.flush()
    return 1 if any(findings for _, findings in results) else 0


__all__ = ["CODES", "Finding", "credential_values", "pack_root", "verify_main", "verify_pack"]
