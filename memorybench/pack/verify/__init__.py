"""`verify_pack`: is a pack whole, consistent with its data, and clean?

A pack is trusted only after this walk (DESIGN.md 4.4). It reads the pack's own files,
the dataset file that run_meta names, and nothing else; it calls no model and changes
nothing. Each problem is a `Finding` with a stable `code` (the keys of `CODES`), the file
in the pack (with `:LINE` for a JSONL row) and one line of message.

The checks run in the order of `CHECKS`, each a function of the shared `Context` (the
pack's files, and what earlier checks parsed: run_meta, the journals, the config, the
dataset) and the `Findings` collector; one module per concern:

- `structure`: `_SUCCESS` exists and the pack's files are the ones it closes, by content
  (`memorybench.pack.success`; timestamps are never read): every file outside
  `autorater/` has the sha256 and size `_SUCCESS` recorded, none is gone, none was added;
  a later stage's marker under `autorater/` closes its own folder the same way (an empty
  one, the autorater's before it hashed its files, is not checked; an empty top
  `_SUCCESS`, a pack from before content hashes, is a finding). `memorybench rescore`,
  which may rewrite predictions.csv and metrics.json, records their new hashes in
  `_SUCCESS`; the `metrics` check verifies their content. Then: the files every pack has;
  no `*.part` file; the known records parsed and matched against their schemas; unknown
  JSON/JSONL files accepted only under the open folders (`autorater/`, `agent/`,
  `memory/`) and only when every row carries a `schema` field;
- `provenance`: config.resolved.yaml hashes to run_meta and the run id; a launcher's
  `provenance/cloudrun.json` matches its schema and names this run (run id, config
  sha256, resolved-config sha256); the dataset is the one run_meta names (pin or path,
  by sha256); every prompts/ file hashes to run_meta.prompts;
- `rows`: every row of every other record file validates against the schema it names
  (the registry of `memorybench.records`);
- `counts`: the predictions are exactly the run's questions in file order (the first
  `question_count`, or those `question_ids` / `question_sample` choose, drawn again), with
  no duplicate, no gap, `index` = position; run_meta's question_count / questions_total /
  is_prefix / max_questions / selection agree with the dataset; traces, memory manifest and
  lineage agree with them;
- `hashes`: REFERENCE_PIN files and memory files hash to their keys;
- `traces`: each reader message rebuilt from its parts hashes to its trace and
  prediction row, and the rows agree;
- `judges`: each judge message rebuilt by its judge's protocol from the judge folder's
  template file and the trace's slots hashes to the trace, and the template and slots are
  those the protocol gives the question's stored row;
- `contamination`: no gold string that is not in the conversation's source text reaches
  a reader prompt, a memory file or an agent workspace file (`needles`: the scan);
- `metrics`: predictions.csv and metrics.json equal a fresh rescore of the stored rows;
- `budget`: memory/budget.json (the retrieval budget the run held) matches its schema and
  equals a recompute from the pack's config, retrievals, manifest and predictions;
- `memory_failures`: a warning (`findings.WARNINGS`: printed, not a failure) when writer
  tasks failed and were skipped, so the memory lacks what they would have written;
- `replies`: warnings when reader replies had no text (stored empty) or answers were cut
  to `reader.max_answer_chars`;
- `secrets`: no secret-looking string (API keys, bearer tokens, private keys, the exact
  values of the credentials given in `secrets`) in any file.

`memorybench verify PACK [PACK...]` is `verify_main`. A pack may be a local folder or a
`gs://` URI: a pack in a bucket is downloaded into a temporary folder and checked there,
its findings named against the `gs://` location.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict

from memorybench.errors import OneLineParser, printable
from memorybench.pack.verify import (
    budget,
    contamination,
    counts,
    hashes,
    judges,
    memory_failures,
    metrics,
    provenance,
    replies,
    rows,
    secrets,
    structure,
    traces,
)
from memorybench.pack.verify.context import Context, local_pack, pack_location, pack_root
from memorybench.pack.verify.findings import CODES, WARNINGS, Finding, Findings, failures
from memorybench.pack.verify.secrets import credential_values

__all__ = [
    "CODES",
    "WARNINGS",
    "Finding",
    "failures",
    "credential_values",
    "local_pack",
    "pack_root",
    "verify_main",
    "verify_pack",
]

#: The checks, in the order they run and report. Earlier ones parse what later ones read
#: (records, then config and dataset, then questions, references and needles).
CHECKS: tuple[Callable[[Context, Findings], None], ...] = (
    structure.check_success,
    structure.check_required_files,
    structure.check_partial_files,
    structure.check_known_records,
    structure.check_other_json,
    provenance.check_config,
    provenance.check_cloudrun_provenance,
    rows.check_every_row,
    structure.check_reader_traces_present,
    provenance.check_dataset,
    counts.check_counts,
    provenance.check_prompts,
    hashes.check_references,
    hashes.check_memory,
    contamination.check_needles,
    traces.check_traces,
    judges.check_judge_traces,
    contamination.check_files_for_gold,
    metrics.check_metrics,
    budget.check_budget,
    memory_failures.check_writer_failures,
    replies.check_replies,
    secrets.check_secrets,
)


def verify_pack(
    pack: str | os.PathLike[str], *, pins_dir: str | os.PathLike[str] | None = None, secrets: Iterable[str] = ()
) -> list[Finding]:
    """Every finding for one pack, a folder or a `gs://` URI (the pack verifies when every
    finding is a warning, `findings.WARNINGS`: none at all for most packs).
    Raises UserError if it is not a pack."""
    with local_pack(pack) as root:
        ctx = Context.open(root, pins_dir, secrets)
        out = Findings()
        for check in CHECKS:
            check(ctx, out)
        return out.findings()


def verify_main(argv: Sequence[str]) -> int:
    """`memorybench verify PACK [PACK...] [--json] [--pins DIR]`: 0 when every pack verifies, 1 otherwise.

    memorybench/cli.py wires `memorybench verify` to this function. A PACK is a folder or
    a `gs://` URI (downloaded first, reported as the URI). A path that is not a
    pack raises UserError, which the CLI prints as one line. Findings print as
    `CODE path: message`, one per line (stdout); `--json` prints a JSON list of
    {pack, code, path, message} instead. The values of the credential variables present
    (OPENAI_API_KEY, *_API_KEY, *_TOKEN, ...) are searched for.
    """
    parser = OneLineParser(
        prog="memorybench verify", description="Check packs: schemas, counts, hashes, _SUCCESS, gold leaks, secrets."
    )
    parser.add_argument("packs", nargs="+", metavar="PACK", help="a pack folder <packs>/<name>/runs/<run_id>, or its gs:// URI")
    parser.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    parser.add_argument(
        "--pins", help="pins folder holding the pinned dataset (default: $MEMORYBENCH_PINS or the user cache dir)"
    )
    ns = parser.parse_args(list(argv))
    roots = [pack_location(p) for p in ns.packs]  # a local folder that is not a pack fails before any check
    values = credential_values()
    results = [(root, verify_pack(root, pins_dir=ns.pins, secrets=values)) for root in roots]
    if ns.json:
        # a finding quotes the pack's names and contents, outside text: no control character reaches the terminal
        print(
            printable(
                json.dumps(
                    [{"pack": str(root), **asdict(f)} for root, findings in results for f in findings],
                    indent=2,
                    ensure_ascii=False,
                )
            )
        )
    else:
        for root, findings in results:
            for f in findings:
                print(printable(f.format(root), newlines=False))  # one finding, one line
            if not failures(findings):
                warned = len(findings)
                print(
                    printable(f"ok {root}", newlines=False)
                    + (f" ({warned} warning{'s' if warned > 1 else ''})" if warned else "")
                )
    sys.stdout.flush()
    return 1 if any(failures(findings) for _, findings in results) else 0
