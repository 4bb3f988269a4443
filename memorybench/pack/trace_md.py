"""TRACE.md: one answered question walked from its JSON source row to every file.

Written from the pack's own files, with the real paths and line numbers, so that a
reader can audit a number without knowing the code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memorybench.pack import layout
from memorybench.pack.reader import PackReader, jsonl_lines
from memorybench.pack.run_pack import RunPack


def _find(pack: PackReader, relpath: str, key: str, value: Any) -> tuple[int, dict[str, Any]] | None:
    """(line number, row) of the first row of a journal whose `key` is `value`."""
    if not pack.exists(relpath):
        return None
    for number, line in jsonl_lines(pack.read_bytes(relpath)):
        row = json.loads(line)
        if row.get(key) == value:
            return number, row
    return None


def _csv_line(pack: PackReader, question_id: str) -> int | None:
    for number, line in enumerate(pack.read_text(layout.PREDICTIONS_CSV).split("\n"), start=1):
        if line.startswith(question_id + ","):
            return number
    return None


def write_trace_md(pack: RunPack, data_path: Path) -> None:
    reader = PackReader.open(pack.root)
    first = _find(reader, layout.PREDICTIONS, "schema", "prediction.v1")
    if first is None:
        pack.write_text(layout.TRACE_MD, "# Trace\n\nNo question was answered in this pack.\n")
        return
    pred_line, pred = first
    qid, sample_id = pred["question_id"], pred["sample_id"]
    qa_index = int(qid.rsplit("-q-", 1)[1])
    trace_line, trace = _find(reader, layout.READER_TRACES, "question_id", qid) or (None, {})
    manifest_line, manifest = _find(reader, layout.MEMORY_MANIFEST, "sample_id", sample_id) or (None, {})
    csv_line = _csv_line(reader, qid)
    meta = reader.json(layout.RUN_META)
    response = trace.get("response", {})
    request = trace.get("request", {})
    refs = [v["ref"] for v in request.get("slots", {}).values() if v.get("ref")]
    from memorybench.score.rows import score_row  # the scorers import nltk: only when a trace is written

    scores = score_row(pred)
    lines = [
        f"# Trace of one answer: {qid}",
        "",
        f"Run `{meta['run_id']}` (config sha256 `{meta['config_sha256']}`). Every path below is relative to this pack.",
        "",
        "## 1. Source row",
        f"- File: `{data_path}` (sha256 `{meta['data'].get('sha256')}`), conversation `sample_id == \"{sample_id}\"`, "
        f"`qa[{qa_index}]` (question id `{qid}` = `{{sample_id}}-q-{{qa_index}}`).",
        f"- Question: {pred['question']!r}; category {pred['category']}.",
        "- Gold and evidence stay in the source row; they reach no prompt (see `memorybench verify`).",
        "",
        "## 2. Memory",
        f"- Method `{manifest.get('method')}`: `memory/manifest.jsonl` line {manifest_line}; "
        f"text `{manifest.get('memory_path') or 'question-dependent (blobs/)'}`, sha256 `{pred['memory_sha256']}`.",
        f"- Which turns or sessions each item came from: `memory/lineage.jsonl` (rows with sample_id `{sample_id}`).",
        "",
        "## 3. Prompt",
        f"- Template `prompts/{request.get('template')}` (sha256 `{request.get('template_sha256')}`), system message `prompts/system.txt`.",
        f"- The user message is the template with the slot values of `reader/traces.jsonl` line {trace_line} "
        f"(`request.slots`): the question inline, the memory by `ref` ({', '.join(f'`{r[:12]}…`' for r in refs)}), "
        "which `REFERENCE_PIN.json` maps to a file.",
        f"- sha256 of the rebuilt user message = `reader_payload_sha256` = `{pred.get('reader_payload_sha256')}`.",
        "",
        "## 4. Model call",
        f"- `reader/traces.jsonl` line {trace_line}: model requested `{response.get('model_requested')}`, answered "
        f"`{response.get('model_answered')}`; {len(response.get('attempts', []))} attempt(s); usage {response.get('usage')}; "
        f"latency {response.get('latency_s')} s; cache hit {response.get('cache_hit')}; cost {response.get('cost_usd')}.",
        f"- Raw reply: {response.get('text')!r} -> stored prediction {pred['prediction']!r} (whitespace stripped).",
        "",
        "## 5. Scores",
        f"- `predictions.jsonl` line {pred_line}; `predictions.csv` line {csv_line}.",
        f"- LoCoMo F1 {scores['locomo_f1']!r} (category {pred['category']} rule), exact match {scores['exact_match']!r}, "
        f"token F1 {scores['token_f1']!r} (ours).",
        f"- Aggregated into `metrics.json`: `locomo_f1.overall` and `locomo_f1.by_category[\"{pred['category']}\"]`.",
        "",
    ]
    pack.write_text(layout.TRACE_MD, "\n".join(lines))
