"""`memorybench view`: the self-contained HTML file, driven in a real headless Chromium.

The page reads its state from the URL hash (filters, the open question, the paired view),
so `chromium --headless --dump-dom file://...#cat=4` shows the DOM after the page's own
script filtered it. Chromium comes from Debian (setup.sh installs it where apt-get exists).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import LOCOMO
from tracking.pack_factory import add_autorater, make_packs

from memorybench.cli import main
from memorybench.compare.blame import pack_blame
from memorybench.pack.walk import PackWalker
from memorybench.viewers.view import build_view
from memorybench.testing.scripted_server import ScriptedOpenAIServer

CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH: setup.sh installs it with apt-get (`apt-get install -y chromium`)"
)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


class _Dom(HTMLParser):
    """The parts of the dumped DOM the tests read: the question rows (and whether hidden),
    the paired lists, the panel's text, the shown count."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []  # the id of the nearest element with one, per open element
        self.rows: dict[str, bool] = {}
        self.paired: dict[str, list[str]] = {"a-right": [], "b-right": []}
        self.panel: list[str] = []
        self.stats: list[str] = []
        self.head: list[str] = []  # the question table's header text
        self.rule: list[str] = []  # what "right" means, above the paired lists
        self.titles: list[str] = []  # the paired lists' titles
        self.panel_hidden = True
        self.shown: int | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        parent = self.stack[-1] if self.stack else ""
        here = a.get("id") or parent
        if tag == "tr" and "data-qid" in a:
            if parent == "rows":
                self.rows[a["data-qid"]] = "hidden" in a
            elif parent in self.paired:
                self.paired[parent].append(a["data-qid"])
        if a.get("id") == "panel":
            self.panel_hidden = "hidden" in a
        if a.get("id") == "count":
            self.shown = int(a.get("data-shown", -1))
        if tag not in ("br", "img", "input", "meta", "link", "hr", "col", "area", "base", "wbr", "source"):
            self.stack.append(here)

    def handle_endtag(self, tag):
        if tag not in ("br", "img", "input", "meta", "link", "hr", "col", "area", "base", "wbr", "source") and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if self.stack and self.stack[-1] == "panel":
            self.panel.append(data)
        if self.stack and self.stack[-1] == "paired-stats":
            self.stats.append(data)
        if self.stack and self.stack[-1] == "head":
            self.head.append(data)
        if self.stack and self.stack[-1] in ("paired-rule", "paired-basis"):
            self.rule.append(data)
        if self.stack and self.stack[-1] in ("a-right-title", "b-right-title"):
            self.titles.append(data)

    @property
    def visible(self) -> list[str]:
        return [qid for qid, hidden in self.rows.items() if not hidden]

    @property
    def panel_text(self) -> str:
        return "".join(self.panel)


def dom(page: Path, fragment: str = "") -> _Dom:
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    parsed = _Dom()
    parsed.feed(done.stdout)
    return parsed


@pytest.fixture(scope="module")
def packs(tmp_path_factory):
    root = tmp_path_factory.mktemp("view")
    full, summaries = make_packs(root)
    judge = add_autorater(full, passes=2)
    add_autorater(summaries, passes=1)
    page = build_view([full, summaries], root / "view.html")
    return full, summaries, judge, page


def test_the_file_is_self_contained(packs):
    *_, page = packs
    text = page.read_text("utf-8")
    assert "<script src" not in text and "<link" not in text and "@import" not in text
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    assert text.count("</script>") == text.count("<script")  # no text closed a script element early


@needs_chromium
def test_the_table_lists_every_question_and_a_filter_narrows_it(packs):
    full, _, _, page = packs
    questions = [r["question_id"] for r in _rows(full / "predictions.jsonl")]
    everything = dom(page)
    assert list(everything.rows) == questions and everything.visible == questions and everything.shown == len(questions)
    category = {r["question_id"]: r["category"] for r in _rows(full / "predictions.jsonl")}
    by_category = dom(page, "cat=4")
    assert by_category.visible == [q for q in questions if category[q] == 4] and by_category.shown == 2
    searched = dom(page, "conv=mini-2&q=dev's")
    assert searched.visible == ["mini-2-q-2"]  # "How old is Dev's dog?"
    blames = pack_blame(PackWalker.open(full))
    by_blame = dom(page, "blame=correct&pack=0")
    assert by_blame.visible == [q for q in questions if blames[q].blame == "correct"] and by_blame.visible


@needs_chromium
def test_a_questions_panel_shows_its_prompt_verdict_and_evidence(packs):
    full, _, judge, page = packs
    opened = dom(page, "open=mini-1-q-0")
    assert not opened.panel_hidden
    text = opened.panel_text
    trace = _rows(full / "reader/traces.jsonl")[0]
    assert "Question: What did Ana start?" in text and "Below is the memory of conversations" in text  # the prompt as sent
    assert trace["request"]["system"] in text and "sha256 matches reader_payload_sha256" in text
    assert f"{judge} pass 1: CORRECT" in text
    assert f"{judge}: not calibrated" in text  # what the judge accepts, beside its verdicts (judge-check)
    assert "pottery" in text and "D1:1" in text  # the gold and its evidence turn


@needs_chromium
def test_the_paired_view_lists_exactly_the_questions_whose_correctness_differs(packs):
    full, summaries, _, page = packs
    a, b = pack_blame(PackWalker.open(full)), pack_blame(PackWalker.open(summaries))
    a_only = [q for q in a if a[q].correct and not b[q].correct]
    b_only = [q for q in a if b[q].correct and not a[q].correct]
    assert a_only and b_only  # the fixture's two memories differ both ways
    paired = dom(page, "view=paired&a=0&b=1")
    assert paired.paired == {"a-right": a_only, "b-right": b_only}
    swapped = dom(page, "view=paired&a=1&b=0")
    assert swapped.paired == {"a-right": b_only, "b-right": a_only}
    # above the lists, the interval `compare` gives for the same two packs, over conversations
    from memorybench.compare.conditions import paired_difference

    f1 = paired_difference([full], [summaries])["locomo_f1"]
    text = "".join(paired.stats)
    assert f"over {f1['n']} questions in 2 conversation(s): {f1['difference']:+.4f}" in text
    assert f"[{f1['low']:.4f}, {f1['high']:.4f}]" in text and "cluster-robust t (CR1), 2 conversations, 1 df" in text


def test_packs_are_named_by_memory_and_model_and_right_is_defined_without_a_judge(packs):
    *_, page = packs
    data = json.loads(
        re.search(r'<script type="application/json" id="mb-data">(.*?)</script>', page.read_text("utf-8"), re.S).group(1)
    )
    assert [p["name"] for p in data["packs"]] == ["full_context / scripted", "session_summaries / scripted"]
    assert "without a judge (no autorater run, category 5, or every pass failed), LoCoMo F1 &gt;= 0.5" in page.read_text("utf-8")


@needs_chromium
def test_the_viewer_heads_pack_columns_with_memory_and_model_and_says_what_right_means(packs):
    *_, page = packs
    table = "".join(dom(page).head)
    assert "full_context / scripted: F1" in table and "session_summaries / scripted: F1" in table
    assert "0:" not in table and "1:" not in table
    paired = dom(page, "view=paired&a=0&b=1")
    rule = " ".join("".join(paired.rule).split())
    assert "without a judge (no autorater run, category 5, or every pass failed), LoCoMo F1 >= 0.5" in rule
    assert "A (full_context / scripted): judge " in rule and "B (session_summaries / scripted): judge " in rule
    assert "A (full_context / scripted) right, B wrong" in "".join(paired.titles)


@needs_chromium
def test_a_screenshot_renders(packs, tmp_path):
    *_, page = packs
    shot = tmp_path / "viewer.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1400,900",
            "--virtual-time-budget=10000",
            f"--screenshot={shot}",
            page.resolve().as_uri() + "#open=mini-1-q-0",
        ],
        capture_output=True,
        timeout=180,
        check=True,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_view_on_the_command_line(packs, tmp_path, capsys):
    full, *_ = packs
    out = tmp_path / "v.html"
    assert main(["view", str(full.parents[1]), "--out", str(out)]) == 0  # a packs folder: both of its packs
    assert "(2 pack(s))" in capsys.readouterr().out and out.is_file()
    assert main(["view", str(tmp_path / "nothing")]) == 2


@needs_chromium
def test_a_full_context_pack_of_all_1986_questions_opens_and_lists_them(tmp_path):
    """The released locomo10.json on the scripted server: every question in the DOM, a filter works."""
    with ScriptedOpenAIServer() as server:
        assert (
            main(
                [
                    "qa",
                    "reader=openai_compatible",
                    f"reader.base_url={server.base_url}",
                    "reader.model=scripted",
                    f"paths.packs={tmp_path / 'packs'}",
                    f"paths.cache={tmp_path / 'cache'}",
                    "name=big",
                ]
            )
            == 0
        )
    (pack,) = (tmp_path / "packs" / "big" / "runs").iterdir()
    page = build_view([pack], tmp_path / "big.html")
    predictions = _rows(pack / "predictions.jsonl")
    assert len(predictions) == 1986 and LOCOMO.is_file()
    # ten memory texts stored once each, not once per question
    assert page.stat().st_size < 8_000_000
    everything = dom(page)
    assert list(everything.rows) == [r["question_id"] for r in predictions]
    temporal = dom(page, "cat=2&open=conv-26-q-1")
    assert temporal.shown == sum(1 for r in predictions if r["category"] == 2)
    assert "Question: When did Melanie paint a sunrise?" in temporal.panel_text


def test_a_column_is_named_by_the_models_that_answered_and_the_writer_as_compare_names_it():
    """`reader.model=auto` resolves to the embedded model: the column says which (compare does),
    and a memory a model wrote names its writer, as compare's condition does."""
    from memorybench.viewers.view import _pack_name

    meta = {
        "choices": {"memory": "amem", "answerer": "reader"},
        "models": [
            {"role": "reader", "requested": "auto", "answered": ["gemma3-270m"]},
            {"role": "writer", "requested": "auto", "answered": ["smollm2-135m"]},
        ],
    }
    assert _pack_name(meta, 0, []) == "amem (writer smollm2-135m) / gemma3-270m"
    before = [{"name": "amem (writer smollm2-135m) / gemma3-270m"}]
    assert _pack_name(meta, 1, before) == "amem (writer smollm2-135m) / gemma3-270m (pack 2)"
    plain = {"choices": {"memory": "rag"}, "models": [{"role": "reader", "requested": "gpt-4o-mini", "answered": []}]}
    assert _pack_name(plain, 0, []) == "rag / gpt-4o-mini"
