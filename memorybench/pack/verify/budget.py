"""memory/budget.json equals the retrieval budget recomputed from the pack's own rows.

qa writes `memory/budget.json` (`memorybench.pack.budget.BudgetSummary`) when a run sets a
budget; a run with `budget.top_k` set always has one (the key exists only since then, so
an older pack without it is not asked for one). The file is checked against its schema and
against `compute_budget` over the pack's config, memory manifest, retrievals and
predictions: an edited count, flag or figure is a finding.
"""

from __future__ import annotations

import json

from memorybench.pack import layout
from memorybench.pack.budget import BudgetSummary, compute_budget
from memorybench.pack.reader import PackReader
from memorybench.pack.verify.context import Context
from memorybench.pack.verify.findings import Findings
from memorybench.pack.verify.structure import load_json, validate

__all__ = ["check_budget"]

CODE = "memory.budget"


def check_budget(ctx: Context, out: Findings) -> None:
    relpath = layout.MEMORY_BUDGET
    if not (ctx.root / relpath).is_file():
        if ctx.cfg_get("budget", "top_k") is not None and (ctx.root / layout.MEMORY_MANIFEST).is_file():
            out.add(CODE, relpath, "missing; a run with budget.top_k set records whether its retrieval budget held")
        return
    data = load_json(ctx, out, relpath)
    if data is None:
        return
    if not validate(out, relpath, None, data, BudgetSummary):
        ctx.bad_files.add(relpath)
        return
    if ctx.cfg is None:
        return  # config.resolved.yaml's own finding says why
    journals = [rel for rel in ctx.rel.values() if rel.startswith(f"{layout.MEMORY}/") and rel.endswith("/retrievals.jsonl")]
    read = [layout.MEMORY_MANIFEST, layout.PREDICTIONS, *journals]
    if any(rel in ctx.bad_files or out.about(rel, ("json", "schema")) for rel in read):
        return  # a row that does not parse or match is the json or schema check's finding
    config = ctx.cfg if isinstance(ctx.cfg, dict) else None  # else read from the file as plain YAML
    try:
        expected = json.loads(compute_budget(PackReader.open(ctx.root), config=config).model_dump_json(by_alias=True))
    except (ValueError, TypeError, AttributeError) as e:
        out.add(CODE, relpath, f"cannot be recomputed from the pack's rows ({' '.join(str(e).split())[:200]})")
        return
    if expected != data:
        changed = sorted(k for k in set(expected) | set(data) if expected.get(k) != data.get(k))
        out.add(
            CODE,
            relpath,
            f"differs from the budget recomputed from the pack's config, retrievals, manifest and predictions "
            f"({', '.join(changed)}); it no longer says what the run's retrieval returned",
        )
