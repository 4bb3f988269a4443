"""The board as a static site: plain files that open from disk and from any static host.

    index.html                 one table per benchmark: systems as rows (each pack under each judge)
    benchmark-<name>.html      that benchmark's table, its forest plot of differences against a
                               baseline the reader picks, accuracy against cost per question, the
                               judge-sensitivity table and the reference contract
    system-<key>.html          one pack: its figures under each judge, its whole contract, its marks
    run-<key>.html             the pack's viewer page (`memorybench view`): every question

Every page is one file: its style, its script (`memorybench.board.assets`) and its data inline,
nothing fetched. Data sits in `<script type="application/json">` blocks with `<` written as
`\\u003c`, so no text can close the element; the script puts every text of a pack into the page as
text (`textContent`), never as markup, and sets links only to the board's own page names; and
each page's Content-Security-Policy allows no script but its own (by sha256) and no inline
handler, so a name or answer such as `<img src=x onerror=...>` in an imported file stays text.
The first page carries no per-unit sums and no per-question data: its size grows with the
packs, not with their questions.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memorybench.board.assets import SCRIPT, STYLE
from memorybench.board.row import BoardRow
from memorybench.board.tables import benchmark_tables, judge_sensitivity, page_name, t_quantiles
from memorybench.errors import UserError
from memorybench.fs import replace_derived

__all__ = ["INDEX", "write_site"]

INDEX = "index.html"


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


#: the policy of every board page: its own script and style only (by hash), images as data: URIs
POLICY = (
    f"default-src 'none'; script-src {_sha(SCRIPT)}; style-src {_sha(STYLE)}; img-src data:; base-uri 'none'; form-action 'none'"
)

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="%%POLICY%%">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%%TITLE%%</title>
<style>%%STYLE%%</style>
</head>
<body>
<header><nav id="nav"><a href="index.html">Board</a></nav><h1 id="title">%%TITLE%%</h1></header>
<main id="main"></main>
%%DATA%%
<script>%%SCRIPT%%</script>
</body>
</html>
"""


def _json_block(value: Any) -> str:
    """The page's data as strict JSON (NaN and infinities as null); `<` escaped so no text can
    close the element (as the viewer's)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a NaN or an infinity somewhere: walked only then
        text = json.dumps(_clean(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c")
    return f'<script type="application/json" id="mb-board">{text}</script>'


def _clean(value: Any) -> Any:
    """NaN and infinities as null: strict JSON for the page."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _page(path: Path, title: str, data: dict[str, Any]) -> Path:
    page = (
        PAGE.replace("%%POLICY%%", POLICY)
        .replace("%%TITLE%%", html.escape(title))
        .replace("%%STYLE%%", STYLE)
        .replace("%%SCRIPT%%", SCRIPT)
        .replace("%%DATA%%", _json_block(data))
    )
    content = page.encode("utf-8")
    if path.is_file() and path.read_bytes() == content:  # unchanged: not written (adding one pack)
        return path
    return _replace(path, content)


def _replace(path: Path, data: bytes) -> Path:
    """`data` renamed into place at `path`: a reader sees the old page or the new one. Not
    fsynced (`fs.replace_derived`): a page is derived, made again from board.json (written
    durably) by the next build, which rewrites any page whose bytes differ (a first build of
    100 packs spent most of a second on 200 fsyncs)."""
    return replace_derived(path, data)


def _nav(tables: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    return [{"href": t["page"], "text": t["title"]} for t in tables]


def _views(rows: Sequence[BoardRow], out: Path) -> list[str]:
    """The viewer page of each row that has none yet (its key names its content); pages of rows
    no longer on the board removed. Returns the keys whose page was written now."""
    from memorybench.viewers.view import build_view

    wanted = {page_name("run", row.key): row for row in rows}
    for stale in out.glob("run-*.html"):
        if stale.name not in wanted:
            stale.unlink()
    written = []
    for name, row in wanted.items():
        if (out / name).is_file():
            continue
        try:
            build_view([row.uri], out / name, title=f"memorybench: {row.system} ({row.run_id})")
        except UserError as e:  # one pack the viewer cannot open: said, and the board still written
            print(f"board: no viewer page for {row.uri}: {e}", file=sys.stderr)
            continue
        written.append(row.key)
    return written


def write_site(rows: Sequence[BoardRow], out: Path, *, title: str = "memorybench board", views: bool = True) -> dict[str, Any]:
    """Write every page of the board of `rows` into `out`; return what was written."""
    out.mkdir(parents=True, exist_ok=True)
    tables = benchmark_tables(rows)
    nav = _nav(tables)
    _page(
        out / INDEX,
        title,
        {"page": "index", "title": title, "nav": nav, "tables": tables, "packs": len(rows), "views": views},
    )
    by_bench: dict[str, list[BoardRow]] = {}
    for row in rows:
        by_bench.setdefault(row.benchmark, []).append(row)
    keep = {INDEX}
    for table in benchmark_tables(rows, units=True):
        members = by_bench[table["benchmark"]]
        max_units = max(
            [r.lexical.units if r.lexical else 0 for r in members] + [j.figure.units for r in members for j in r.judges]
        )
        _page(
            out / table["page"],
            f"{title}: {table['title']}",
            {
                "page": "benchmark",
                "title": table["title"],
                "nav": nav,
                "tables": [table],
                "sensitivity": judge_sensitivity(members),
                "t": t_quantiles(max_units),
                "views": views,
            },
        )
        keep.add(table["page"])
        for entry_key in {e["key"] for e in table["entries"]}:
            row = next(r for r in members if r.key == entry_key)
            entries = [e for e in table["entries"] if e["key"] == entry_key]
            name = page_name("system", row.key)
            _page(
                out / name,
                f"{row.system}",
                {
                    "page": "system",
                    "title": row.system,
                    "nav": nav,
                    "benchmark": {"title": table["title"], "page": table["page"]},
                    "row": {
                        k: v for k, v in row.model_dump(mode="json", by_alias=True).items() if k not in ("judges", "lexical")
                    },
                    "reference": table["reference"],
                    "fields": table["fields"],
                    "entries": [_strip_units(e) for e in entries],
                    "views": views,
                },
            )
            keep.add(name)
    for stale in list(out.glob("system-*.html")) + list(out.glob("benchmark-*.html")):
        if stale.name not in keep:
            stale.unlink()
    written = _views(rows, out) if views else []
    return {"pages": len(keep), "views_written": written, "index_bytes": (out / INDEX).stat().st_size}


def _strip_units(entry: dict[str, Any]) -> dict[str, Any]:
    out = dict(entry)
    for name in ("figure", "lexical"):
        if out.get(name):
            out[name] = {k: v for k, v in out[name].items() if k != "by_unit"}
    return out
