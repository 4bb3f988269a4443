"""`memorybench board PACKS... --out DIR`: the static board of finished packs (docs/board.md).

    memorybench board outputs/packs gs://bucket/root --out board/
    memorybench board outputs/packs --out board/ --no-views     # without the per-run viewer pages

Run it again with one more pack: only that pack is read (board.json keeps the others' rows, keyed
by location and `_SUCCESS` bytes), only the pages whose bytes change are written (the first page,
the benchmark's, the new system's; others where the reference contract moved), and a viewer page
is made for the new run only.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from memorybench.board.site import INDEX, write_site
from memorybench.board.store import update_board
from memorybench.errors import OneLineParser, UserError

__all__ = ["board_main", "build_board"]


def build_board(sources: Sequence[str], out: str | Path, *, views: bool = True, title: str = "memorybench board") -> dict:
    """Update `out/board.json` from `sources` and write the site; return what happened."""
    target = Path(out).expanduser().resolve()
    if target.exists() and not target.is_dir():
        raise UserError(f"--out {out} is a file; pass a folder for the board's pages (e.g. --out board/)")
    update = update_board(sources, target)
    written = write_site(update.board.rows, target, title=title, views=views)
    return {
        "out": str(target),
        "index": str(target / INDEX),
        "packs": len(update.board.rows),
        "added": len(update.added),
        "kept": len(update.kept),
        "dropped": len(update.dropped),
        "unfinished": update.unfinished,
        **written,
    }


def board_main(argv: Sequence[str]) -> int:
    """`memorybench board PACKS... --out DIR [--no-views] [--title T]`."""
    parser = OneLineParser(
        prog="memorybench board",
        description="A static site over finished packs: one table per benchmark, each figure with its interval, "
        "judge and protocol marks; pages per benchmark and system; the runs' viewer pages.",
    )
    parser.add_argument(
        "packs", nargs="+", help="pack folders, roots scanned for <name>/runs/<run_id>/_SUCCESS, or gs:// prefixes"
    )
    parser.add_argument("--out", required=True, help="the folder of the site (board.json keeps its rows between builds)")
    parser.add_argument("--no-views", action="store_true", help="no per-run viewer pages (figures then link nowhere)")
    parser.add_argument("--title", default="memorybench board", help="the site's title")
    ns = parser.parse_args(list(argv))
    result = build_board(ns.packs, ns.out, views=not ns.no_views, title=ns.title)
    if result["unfinished"]:
        print(f"left out {result['unfinished']} unfinished pack(s) (no _SUCCESS)", file=sys.stderr)
    print(
        f"board: {result['index']} ({result['packs']} pack(s): {result['added']} read, {result['kept']} kept, "
        f"{result['dropped']} dropped; {len(result['views_written'])} viewer page(s) written)"
    )
    return 0
