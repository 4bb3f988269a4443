"""The one findings type of `verify_pack`, its codes, and the collector every check adds to."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CODES", "WARNINGS", "Finding", "Findings", "failures", "redact"]

#: Every finding code, and what it means. Codes are stable: scripts may match on them.
CODES: dict[str, str] = {
    "file.missing": "a file every finished pack has is absent",
    "file.partial": "a temporary *.part file left behind by an interrupted write",
    "json": "a JSON file or a JSONL line does not parse (or is not UTF-8)",
    "schema": "a record's `schema` is not a known version, the record does not match its schema, or a JSON file has no schema",
    "count": "row counts disagree with the dataset or run_meta (question_count, questions_total, is_prefix, max_questions, selection, gaps)",
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
    "hash.judge": (
        "a judge trace's message, rebuilt by its protocol from the judge folder's template file and the trace's slots,"
        " does not hash to judge_payload_sha256; or the template file does not hash to the trace's template_sha256;"
        " or the template or slots are not those the protocol gives the question's stored row"
    ),
    "hash.reference": "a REFERENCE_PIN file is missing or does not hash to its key, or a trace uses an unpinned ref",
    "hash.memory": "a memory file does not hash to its manifest memory_sha256, or a row names memory its prompt did not use",
    "metrics": "predictions.csv or metrics.json differ from a fresh rescore of the stored rows",
    "success.missing": "_SUCCESS is absent: the run did not finish",
    "success.unhashed": (
        "_SUCCESS is empty: the pack was finished before markers held content hashes, so its files cannot be checked against it"
    ),
    "success.hash_mismatch": (
        "a file a _SUCCESS closes differs from the sha256 or size recorded there: it changed after the pack was finished"
    ),
    "success.file_missing": "a file a _SUCCESS closes is gone (a file every pack has is reported as file.missing instead)",
    "success.unclosed_file": (
        "a file no _SUCCESS closes (outside autorater/, or in a closed autorater folder): added after the pack was finished"
    ),
    "gold.leak": "a gold string that is not in the conversation's source text appears in a prompt, memory or workspace file (memory that the writer model wrote itself, from inputs scanned clean, may hold it)",
    "secret": "a secret-looking string (API key, token, private key, a credential's value) is stored in the pack",
    "memory.writer_failures": "a warning: writer tasks failed (a reply that did not parse twice, or one the wrapped library reported it could not use), so the memory lacks their inputs (memory/writer/failures.jsonl)",
    "memory.writer_failures_over_limit": "more writer tasks failed than the run's memory.max_failed_share allows: the scores are over a memory that lacks too much of its inputs",
    "memory.budget": (
        "memory/budget.json differs from the budget summary recomputed from the pack's config, retrievals, manifest and"
        " predictions, or a run with budget.top_k set has none"
    ),
    "reply.empty": "a warning: reader replies had no text when asked twice and are stored as empty answers",
    "reply.cut": "a warning: answers longer than reader.max_answer_chars are stored cut",
}

#: codes that say something a reader of the scores must know, about a pack that is whole:
#: printed, never a failure of `memorybench verify`
WARNINGS: frozenset[str] = frozenset({"memory.writer_failures", "reply.empty", "reply.cut"})


@dataclass(frozen=True)
class Finding:
    """One problem in a pack."""

    #: stable code, a key of `CODES`
    code: str
    #: the file in the pack (relative, `/`-separated), with `:LINE` when a row is meant
    path: str
    #: one line: what is wrong and, where it helps, what to do
    message: str

    @property
    def warning(self) -> bool:
        return self.code in WARNINGS

    def format(self, pack_root: Path | str | None = None) -> str:
        where = f"{pack_root}/{self.path}" if pack_root is not None else self.path
        return f"{'warning ' if self.warning else ''}{self.code} {where}: {self.message}"


class Findings:
    """The findings of one pack, in the order the checks add them.

    `add` records one finding; `grouped` records the first row of a kind and counts the
    later ones, so a file with a thousand bad rows is one line, not a thousand.
    """

    def __init__(self) -> None:
        self._entries: list[list[Any]] = []  # [code, path, line, message, count]
        self._grouped: dict[tuple[Any, ...], list[Any]] = {}

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

    def about(self, path: str, codes: Iterable[str]) -> bool:
        """Whether a finding of one of `codes` names the file `path` (any of its lines)."""
        wanted = set(codes)
        return any(code in wanted and where == path for code, where, *_ in self._entries)

    def findings(self) -> list[Finding]:
        out = []
        for code, path, line, message, count in self._entries:
            if count > 1:
                message += f" (and {count - 1} more like it)"
            out.append(Finding(code, f"{path}:{line}" if line is not None else path, message))
        return out


def redact(value: str) -> str:
    """The first four characters of a secret, never more."""
    return value[:4] + "…" if len(value) > 4 else "…"


def failures(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that fail a pack (all but `WARNINGS`)."""
    return [f for f in findings if not f.warning]
