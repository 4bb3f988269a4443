"""The board in a real headless Chromium, driven over the DevTools protocol (tests/board/chromium.py).

Opened from disk (file://): a column header is clicked to sort, a protocol filter is chosen with
the keyboard, a figure's link is followed into the run's viewer page, a system's link into its
page, and the forest plot's baseline is changed; every click is a mouse press and release at the
element's place on screen. No page may log an error (a Content-Security-Policy violation is one),
and no hostile string from a pack (`<img src=x onerror=...>` as the answer model's name,
`</script><script>` in a reply) may run: `window.__pwned` stays undefined everywhere.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from board.chromium import CHROMIUM, Browser
from board.packs import HOSTILE_MODEL, board_packs

from memorybench.board.board_command import build_board
from memorybench.board.store import BOARD_FILE, Board
from memorybench.board.tables import paired_from_units

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH: setup.sh installs it with apt-get (`apt-get install -y chromium`)"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("browser-site")
    build_board([str(board_packs()["root"])], out)
    return out


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no chromium")
    b = Browser()
    yield b
    b.close()


def _number(text: str) -> float | None:
    found = re.match(r"\s*(-?\d+\.\d+)", text)
    return float(found.group(1)) if found else None


@needs_chromium
def test_sort_filter_and_follow_a_figure_into_the_viewer(site, browser):
    b = browser
    b.open((site / "index.html").as_uri())
    assert b.js("document.body.dataset.rendered") == "1"
    total = b.js("document.querySelectorAll('#rows-locomo tr').length")
    rows = Board.model_validate_json((site / BOARD_FILE).read_bytes()).rows
    assert total == sum(max(1, len(r.judges)) for r in rows) == 12  # 8 packs: 3 of them under 2 and 3 judges
    # sort by the figure: first click ascending, second descending; unknown figures last
    b.click("#board-locomo th[data-col=figure]")
    b.click("#board-locomo th[data-col=figure]")
    assert "locomo.sort=figure" in b.js("location.hash") and "locomo.dir=desc" in b.js("location.hash")
    assert b.js("document.querySelector('#board-locomo th[data-col=figure]').getAttribute('aria-sort')") == "descending"
    shown = [_number(t) for t in b.js("[...document.querySelectorAll('#rows-locomo td.figure')].map((td) => td.textContent)")]
    known = [v for v in shown if v is not None]
    assert known == sorted(known, reverse=True) and len(known) >= 8
    # filter by a protocol field: the lenient scripted judge, picked with the keyboard
    options = b.js("[...document.querySelector('#filter-locomo-judge').options].map((o) => o.value)")
    wanted = next(i for i, o in enumerate(options) if "lenient-judge" in o)
    b.choose("#filter-locomo-judge", wanted)
    judges = b.js("[...document.querySelectorAll('#rows-locomo td.judge')].map((td) => td.textContent)")
    assert len(judges) == 3 and all("lenient-judge" in j for j in judges)
    assert b.js("document.getElementById('count-locomo').dataset.shown") == "3"
    # the hostile model's name is in the page as text: the system cell reads it back exactly
    names = b.js("[...document.querySelectorAll('#rows-locomo a.system')].map((a) => a.textContent)")
    assert f"session_summaries / {HOSTILE_MODEL}" in names
    assert b.js("document.querySelectorAll('#main img').length") == 0
    # follow the hostile run's figure into its viewer page: every question listed, nothing run
    key = b.js(
        f"[...document.querySelectorAll('#rows-locomo tr')].find((r) => r.querySelector('a.system').textContent.includes({json.dumps(HOSTILE_MODEL)})).dataset.key"
    )
    b.follow(f"#rows-locomo tr[data-key='{key}'] td.figure a")
    assert b.js("location.href").endswith(f"run-{key}.html")
    assert b.js("document.querySelectorAll('#rows tr').length") == 1986
    assert b.js("typeof window.__pwned") == "undefined"
    assert b.errors == []


@needs_chromium
def test_a_system_page_and_the_forest_plot(site, browser):
    b = browser
    rows = Board.model_validate_json((site / BOARD_FILE).read_bytes()).rows
    hostile = next(r for r in rows if HOSTILE_MODEL in r.system)
    memobase = next(r for r in rows if r.system.startswith("memobase"))
    b.open((site / "index.html").as_uri())
    b.follow(f"#rows-locomo tr[data-key='{hostile.key}'] a.system")
    assert b.js("document.getElementById('title').textContent") == hostile.system
    differs = b.js("[...document.querySelectorAll('table.contract tr.differs')].map((r) => r.dataset.field)")
    marked = b.js("JSON.parse(document.getElementById('mb-board').textContent).entries.flatMap((e) => e.marks)")
    assert differs == marked and "answer_model" in differs  # its answer model is no one else's
    assert b.js("typeof window.__pwned") == "undefined"
    # the benchmark page: choose memobase under the lenient judge as the baseline
    b.follow("a[href='benchmark-locomo.html']")
    options = b.js("[...document.querySelector('#forest-base').options].map((o) => o.textContent)")
    wanted = next(i for i, o in enumerate(options) if o.startswith("memobase") and "lenient-judge" in o)
    b.choose("#forest-base", wanted)
    base = next(j for j in memobase.judges if "lenient-judge" in j.judge)
    own = next(r for r in rows if r.system.endswith("scripted-a"))
    own_j = next(j for j in own.judges if "lenient-judge" in j.judge)
    expected = paired_from_units(base.figure.by_unit, own_j.figure.by_unit)
    shown = b.js(
        f"document.querySelector('#forest-table tr[data-id=\"{own.key}-{own.judges.index(own_j)}\"] td.diff').textContent"
    )
    assert shown == f"{expected['difference']:+.3f} [{expected['low']:+.3f}, {expected['high']:+.3f}]"
    assert expected["units"] == 10  # the own run's categories 1-4 are memobase's questions, conversation by conversation
    assert b.js("document.querySelectorAll('#forest-plot circle').length") >= 8
    ranks = b.js(
        "[...document.querySelectorAll('#sensitivity-table td[data-rank]')].map((td) => td.dataset.rank).filter((r) => r)"
    )
    assert len(ranks) >= 6
    b.screenshot(site / "benchmark.png")
    assert b.errors == []
