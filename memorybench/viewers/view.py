"""`memorybench view PACK... [--out FILE.html]`: one self-contained HTML file over packs.

    memorybench view outputs/packs/default/runs/<run_id> [more packs or roots] --out view.html

The file needs no server and no network: its styles, its script and its data are inline,
so it opens from disk and can be sent by mail. It shows

* a question table (every answered question of every pack: one row per question, one
  cell per pack with LoCoMo F1, the first judge's pass-1 verdict and the blame class),
  filtered by conversation, category (number and name), score range, judge verdict,
  blame class and free text;
* for a question (click a row), its walk in each pack (`memorybench show`): the gold and
  its evidence turns, the memory with those turns highlighted, the exact prompt (rebuilt
  from its template and slots, its sha256 checked on our side), the reply, the scores,
  every judge's verdicts, the blame facts, an agent's steps;
* with two packs or more, a paired view of two of them: B minus A in LoCoMo F1 with the
  interval over conversations that `compare` gives (`paired_lines`), and the questions one
  gets right and the other wrong (the blame's `correct`: the judge, else LoCoMo F1 >= 0.5),
  side by side.

Filters, the open question and the view live in the URL hash (`#cat=4&blame=ignored`,
`#open=conv-26-q-0`, `#view=paired&a=0&b=1`), so a link names what it shows (and a
headless browser can be pointed at a state). Large texts (a conversation's memory, a
template) are stored once each, as their own inline JSON block parsed only when a panel
needs it: a 1,986-question full-context pack is ten memory texts, not 1,986 copies.
"""

from __future__ import annotations

import html
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memorybench.errors import OneLineParser, UserError
from memorybench.fs import write_atomic
from memorybench.pack.walk import PackWalker, Walk
from memorybench.compare.blame import BASIS_F1, CLASSES, CORRECT_AT, Blame, f1_basis, pack_blame
from memorybench.benchmark import benchmark_named, benchmark_of_pack
from memorybench.score.scorers import LEXICAL

__all__ = ["build_view", "view_main", "view_payload"]

DEFAULT_OUT = "view.html"


class _Texts:
    """Large strings stored once in the page, each under a small integer key."""

    def __init__(self) -> None:
        self.keys: dict[str, int] = {}
        self.values: list[str] = []

    def key(self, text: str | None) -> int | None:
        if text is None:
            return None
        if text not in self.keys:
            self.keys[text] = len(self.values)
            self.values.append(text)
        return self.keys[text]


def _pack_row(walk: Walk, walker: PackWalker, blame: Blame, texts: _Texts) -> dict[str, Any]:
    """One question in one pack, as the page's script reads it (short keys: 1,986 of these)."""
    first = walk.judges[0] if walk.judges else None
    pass1 = next((v for v in first.verdicts if v.pass_ == 1), None) if first else None
    prompt = walk.prompt
    row: dict[str, Any] = {
        "pred": walk.prediction,
        "reply": walk.reply,
        "scores": walk.scores,
        "verdict": pass1.status if pass1 else None,
        "verdicts": [
            {"judge": j.judge_id, "pass": v.pass_, "status": v.status, "label": v.label_raw, "score": v.score, "error": v.error}
            for j in walk.judges
            for v in j.verdicts
        ],
        "blame": blame.blame,
        "correct": blame.correct,
        "basis": blame.basis,
        "stored": blame.evidence_stored,
        "given": blame.evidence_given,
        "used": blame.answer_used_evidence,
        "dropped": list(blame.gold_dropped),
        "mem": texts.key(walker.text(walk.memory.text_path)),
        "memSha": walk.memory.memory_sha256,
        "calls": [_call_line(c) for c in walk.calls],
    }
    if prompt is not None:
        row["prompt"] = {
            "tpl": texts.key(walker.text(f"prompts/{prompt.template}") if prompt.template else None),
            "name": prompt.template,
            "q": (prompt.slots.get("question") or {}).get("text"),
            "memSlot": "memory" in prompt.slots,
            "footer": texts.key(walker.text(f"prompts/{prompt.footer}") if prompt.footer else None),
            "system": texts.key(prompt.system),
            "sha": prompt.sha256,
            "ok": prompt.matches,
            "as": prompt.recorded_as,
        }
    if walk.memory.retrieval is not None:
        row["hits"] = [[h.get("item_id"), h.get("score")] for h in walk.memory.retrieval.hits]
    if walk.agent:
        process = walk.agent[-1]
        row["agent"] = {
            "mode": process.mode,
            "status": process.status,
            "usage": process.usage,
            "wall": process.wall_s,
            "steps": [
                {"n": a.step, "kind": a.kind, "cmd": a.command, "reads": list(a.reads), "dia": list(a.dia_ids)}
                for a in process.actions
            ],
            "notes": (process.notes or {}).get("path"),
        }
    return row


def _call_line(call: Any) -> str:
    usage = ", ".join(f"{k} {v}" for k, v in call.usage.items())
    cost = "unknown" if call.cost_usd is None else f"${call.cost_usd:.6f}"
    answered = f", answered {call.model_answered}" if call.model_answered else ""
    attempts = f"; {len(call.attempts)} attempt(s)" if call.attempts else ""
    return (
        f"{call.role}: requested {call.model_requested}{answered}{attempts}; "
        f"{usage}; {call.latency_s} s; cost {cost} ({call.where.path} line {call.where.line})"
    )


def _calibrations(walker: PackWalker) -> dict[str, str]:
    """Per judge of the pack, what it accepts (`memorybench judge-check`), or "not calibrated"."""
    import yaml

    from memorybench.compare.conditions import judge_calibration
    from memorybench.pack.judge_calibration import cache_dir_of

    pack = walker.pack
    cache = cache_dir_of(yaml.safe_load(pack.read_text("config.resolved.yaml")) if pack.exists("config.resolved.yaml") else None)
    return {judge: judge_calibration(judge, cache) for judge in sorted(walker.judges())}


def view_payload(packs: Sequence[str | os.PathLike[str]]) -> tuple[dict[str, Any], list[str]]:
    """(the page's data, its large texts): every answered question of every pack."""
    texts = _Texts()
    questions: dict[str, dict[str, Any]] = {}
    pack_rows: list[dict[str, Any]] = []
    first_benchmark = None
    for i, location in enumerate(packs):
        walker = PackWalker.open(location)
        blames = pack_blame(walker)
        meta = walker.meta
        bench = benchmark_of_pack(meta)
        first_benchmark = first_benchmark or bench
        basis = f1_basis(bench)  # another benchmark's: its lexical diagnostic by its name
        pack_rows.append(
            {
                "label": meta.get("run_id") or walker.pack.name,
                "name": _pack_name(meta, i, pack_rows),
                "uri": walker.pack.uri(),
                "choices": meta.get("choices") or {},
                "judges": sorted(walker.judges()),
                "calibration": _calibrations(walker),
                **({"noJudge": basis} if basis != BASIS_F1 else {}),
            }
        )
        for qid in walker.question_ids():
            walk = walker.walk(qid)
            if qid not in questions:
                s = walk.source
                questions[qid] = {
                    "id": qid,
                    "conv": walk.sample_id,
                    "cat": walk.category,
                    "catName": s.category_name,
                    "q": walk.question,
                    "gold": None if s.gold is None else str(s.gold),
                    "adv": s.adversarial_answer,
                    "ev": [
                        {"id": t.dia_id, "session": t.session, "date": t.date_time, "text": t.rendered} for t in s.evidence_turns
                    ],
                    "evNote": s.note if s.evidence is None else None,
                    "ge": _gold_error(s),
                    "r": [None] * len(packs),
                }
            questions[qid]["r"][i] = _pack_row(walk, walker, blames[qid], texts)
    data = {
        "packs": pack_rows,
        "classes": list(CLASSES),
        # the per-question scores' lexical key, and the basis a pack without a judge is read by
        "lexical": LEXICAL,
        "f1Basis": f"{benchmark_named(None).lexical_figure} >= {CORRECT_AT}",
        "questions": list(questions.values()),
        "pairs": paired_lines(list(questions.values()), len(packs), first_benchmark),
    }
    return data, texts.values


def _pack_name(meta: dict[str, Any], index: int, before: Sequence[dict[str, Any]]) -> str:
    """A pack's column head: its memory method and the answerer's model ("full_context / gpt-4o-mini"),
    with its position added where an earlier pack has the same name."""
    choices = meta.get("choices") or {}
    models = meta.get("models") or []
    answerer = next((m for m in models if m.get("role") in ("reader", "agent", choices.get("answerer"))), None)
    model = _model_name(answerer or (models[0] if models else {})) or choices.get("answerer") or "unknown model"
    memory = choices.get("memory") or "unknown memory"
    writer = _model_name(next((m for m in models if m.get("role") == "writer"), {}))
    if writer:  # a memory a model wrote: named by its writer, as compare names the condition
        memory = f"{memory} (writer {writer})"
    name = f"{memory} / {model}"
    return f"{name} (pack {index + 1})" if any(b["name"].split(" (pack ")[0] == name for b in before) else name


def _model_name(model: dict[str, Any]) -> str | None:
    """The model that answered (the embedded model `auto` resolved to, as compare names it), else the one asked for."""
    answered = model.get("answered") or []
    return str(answered[0]) if len(answered) == 1 else model.get("requested")


def _gold_error(s: Any) -> dict[str, Any] | None:
    """The audit's finding on a source row for the page (`memorybench.benchmarks.locomo.gold_audit`), or None."""
    e = s.gold_error
    if e is None:
        return {"note": s.gold_error_note} if s.gold_error_note else None
    return {
        "kind": e.kind,
        "type": e.error_type,
        "audit": e.audit_id,
        "answer": e.corrected_answer,
        "evidence": [{"id": t.dia_id, "date": t.date_time, "text": t.rendered} for t in s.corrected_evidence_turns],
        "reasoning": e.reasoning,
    }


def paired_lines(questions: Sequence[dict[str, Any]], packs: int, bench: Any = None) -> dict[str, str]:
    """Per ordered pair `"a,b"`: B minus A in the lexical F1 (LoCoMo F1 on LoCoMo, a diagnostic on
    another benchmark `bench`) over the questions both answered, with `compare`'s interval over
    samples, p-value and minimum detectable difference
    (`memorybench.compare.intervals.paired_difference`), in one line."""
    from memorybench.compare.intervals import format_p, mdd_sentence, paired_difference

    bench = bench or benchmark_named(None)

    out = {}
    for a in range(packs):
        for b in range(packs):
            if a == b:
                continue
            both = [
                (q["r"][a]["scores"].get(LEXICAL), q["r"][b]["scores"].get(LEXICAL), q["conv"])
                for q in questions
                if q["r"][a] and q["r"][b]
            ]
            both = [x for x in both if x[0] is not None and x[1] is not None]
            d = paired_difference([x[0] for x in both], [x[1] for x in both], [x[2] for x in both])
            line = f"{bench.lexical_figure}, B minus A over {d.n} questions in {bench.samples(d.clusters)}: "
            if d.difference is None:
                out[f"{a},{b}"] = line + "no question in common"
            elif d.low is None:
                out[f"{a},{b}"] = line + f"{d.difference:+.4f}; no interval: {d.note}"
            else:
                out[f"{a},{b}"] = (
                    line + f"{d.difference:+.4f}, {round(d.confidence * 100)}% interval [{d.low:.4f}, "
                    f"{d.high:.4f}], p {format_p(d.p_two_sided, d.p_resolution)} ({d.method}); "
                    + mdd_sentence(d.difference, d.p_two_sided, d.mdd, d.clusters)
                )
    return out


def _json_block(element_id: str, value: Any) -> str:
    """An inline JSON block; `<` escaped so no text can close the script element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def build_view(packs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *, title: str | None = None) -> Path:
    """Write the viewer of `packs` (pack folders or gs:// URIs) to `out`; return its path."""
    if not packs:
        raise UserError("no pack to view; pass pack folders <packs>/<name>/runs/<run_id> or a packs root")
    data, texts = view_payload(packs)
    name = title or (f"memorybench: {data['packs'][0]['label']}" if len(packs) == 1 else f"memorybench: {len(packs)} packs")
    blocks = [_json_block("mb-data", data), *(_json_block(f"mb-text-{k}", t) for k, t in enumerate(texts))]
    page = (
        PAGE.replace("%%TITLE%%", html.escape(name))
        .replace("%%STYLE%%", STYLE)
        .replace("%%SCRIPT%%", SCRIPT)
        .replace("%%DATA%%", "\n".join(blocks))
    )
    return write_atomic(Path(out).expanduser().resolve(), page)


def view_main(argv: Sequence[str]) -> int:
    """`memorybench view PACK... [--out FILE.html]`."""
    from memorybench.compare.aggregate import scan_packs

    parser = OneLineParser(
        prog="memorybench view", description="One self-contained HTML file to browse packs question by question."
    )
    parser.add_argument("packs", nargs="+", help="pack folders, or roots scanned for <name>/runs/<run_id>/_SUCCESS")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"the HTML file to write (default: {DEFAULT_OUT})")
    parser.add_argument("--title", help="the page title")
    ns = parser.parse_args(list(argv))
    scan = scan_packs(ns.packs)
    if not scan.finished:
        raise UserError(f"no finished pack in {', '.join(ns.packs)}: a pack is finished when it has _SUCCESS")
    if scan.unfinished:
        print(f"left out {len(scan.unfinished)} unfinished pack(s) (no _SUCCESS)", file=sys.stderr)
    path = build_view(scan.finished, ns.out, title=ns.title)
    print(f"view: {path} ({len(scan.finished)} pack(s))")
    return 0


# -- the page ---------------------------------------------------------------------------
PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%%TITLE%%</title>
<style>%%STYLE%%</style>
</head>
<body>
<header>
  <h1>%%TITLE%%</h1>
  <nav><a href="#" id="tab-table">Questions</a> <a href="#view=paired" id="tab-paired">Paired</a>
  <span id="count"></span></nav>
  <form id="filters" onsubmit="return false">
    <label>Conversation <select id="f-conv"><option value="">all</option></select></label>
    <label>Category <select id="f-cat"><option value="">all</option></select></label>
    <label>Pack <select id="f-pack"><option value="">any</option></select></label>
    <label>F1 from <input id="f-min" type="number" step="0.05" min="0" max="1" size="4"></label>
    <label>to <input id="f-max" type="number" step="0.05" min="0" max="1" size="4"></label>
    <label>Verdict <select id="f-verdict"><option value="">any</option><option>CORRECT</option><option>WRONG</option>
      <option>FAILED</option><option>SKIPPED</option><option value="none">no judge</option></select></label>
    <label>Blame <select id="f-blame"><option value="">any</option></select></label>
    <label>Known gold error <select id="f-gold"><option value="">any</option><option value="answer">wrong gold answer</option>
      <option value="evidence">wrong citation only</option><option value="none">none known</option></select></label>
    <label>Search <input id="f-q" type="search" placeholder="id, question, answer, gold"></label>
  </form>
</header>
<main>
  <section id="table-view">
    <table id="questions"><thead><tr id="head"></tr></thead><tbody id="rows"></tbody></table>
  </section>
  <section id="paired-view" hidden>
    <p id="paired-pick">A <select id="p-a"></select> B <select id="p-b"></select></p>
    <p id="paired-stats"></p>
    <p id="paired-rule">Right means: the pack's judge (its first) gave a mean score of at least 0.5 over its passes with a
      label; without a judge (no autorater run, category 5, or every pass failed), LoCoMo F1 &gt;= 0.5.
      <span id="paired-basis"></span></p>
    <div class="pair-cols">
      <div><h2 id="a-right-title"></h2><table><tbody id="a-right"></tbody></table></div>
      <div><h2 id="b-right-title"></h2><table><tbody id="b-right"></tbody></table></div>
    </div>
  </section>
  <aside id="panel" hidden></aside>
</main>
%%DATA%%
<script>%%SCRIPT%%</script>
</body>
</html>
"""

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#fafbfc}
header{position:sticky;top:0;background:#fff;border-bottom:1px solid #d8dde6;padding:8px 14px;z-index:2}
h1{font-size:17px;margin:0 0 4px}
nav a{margin-right:12px} #count{color:#5a6475;margin-left:12px}
.gold-error{border-left:3px solid #c0392b;padding-left:8px} .ge{color:#c0392b}
#filters{display:flex;flex-wrap:wrap;gap:6px 14px;margin-top:6px}
#filters label{font-size:12px;color:#5a6475} #filters select{max-width:260px} #filters input[type=search]{width:220px}
main{display:flex;gap:12px;padding:10px 14px;align-items:flex-start}
section{flex:1 1 50%;min-width:0;overflow-x:auto}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #e6e9ef;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f1f3f7;font-weight:600;font-size:12px}
tbody tr{cursor:pointer} tbody tr:hover{background:#eef4ff} tr.open{background:#dfeaff}
td.qid{white-space:nowrap;font-family:ui-monospace,monospace;font-size:12px} td.nw{white-space:nowrap}
.cell{white-space:nowrap;font-size:12px}
.b-correct{color:#11703a}.b-ignored{color:#a35b00}.b-not_stored{color:#b3261e}.b-not_retrieved{color:#8e24aa}.b-wrong_judged{color:#1f5fbf}
aside{flex:1 1 50%;min-width:0;background:#fff;border:1px solid #d8dde6;padding:10px 12px;max-height:calc(100vh - 150px);overflow:auto;position:sticky;top:140px}
aside h2{font-size:15px;margin:4px 0} aside h3{font-size:13px;margin:12px 0 4px;border-bottom:1px solid #e6e9ef}
.packs{display:flex;gap:12px} .packs>div{flex:1;min-width:0}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;border:1px solid #e6e9ef;padding:6px;font-size:12px;max-height:420px;overflow:auto}
mark.ev{background:#ffe58a;outline:1px solid #e0b300} .ok{color:#11703a} .bad{color:#b3261e}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 10px;margin:0} dt{color:#5a6475}
dd{margin:0;min-width:0;overflow-wrap:anywhere}
.pair-cols{display:flex;gap:12px} .pair-cols>div{flex:1;min-width:0} h2{font-size:14px}
"""

SCRIPT = r"""
'use strict';
const DATA = JSON.parse(document.getElementById('mb-data').textContent);
const TEXTS = {};
function text(key) {  // a large text, parsed the first time a panel needs it
  if (key === null || key === undefined) return null;
  if (!(key in TEXTS)) TEXTS[key] = JSON.parse(document.getElementById('mb-text-' + key).textContent);
  return TEXTS[key];
}
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s === null || s === undefined ? '' : s).replace(/[&<>"']/g,
  (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
const fmt = (x) => (x === null || x === undefined) ? '-' : (typeof x === 'number' ? x.toFixed(2) : String(x));
const NP = DATA.packs.length;
const FIELDS = ['conv', 'cat', 'pack', 'min', 'max', 'verdict', 'blame', 'gold', 'q'];

function hashState() {
  const out = {};
  for (const part of location.hash.replace(/^#/, '').split('&')) {
    if (!part) continue;
    const i = part.indexOf('=');
    const k = decodeURIComponent(i < 0 ? part : part.slice(0, i));
    out[k] = i < 0 ? '' : decodeURIComponent(part.slice(i + 1).replace(/\+/g, ' '));
  }
  return out;
}
function setHash(state) {
  const parts = Object.keys(state).filter((k) => state[k] !== '' && state[k] !== undefined && state[k] !== null)
    .map((k) => encodeURIComponent(k) + '=' + encodeURIComponent(state[k]));
  history.replaceState(null, '', parts.length ? '#' + parts.join('&') : location.pathname + location.search);
}
function option(select, value, label) {
  const o = document.createElement('option'); o.value = value; o.textContent = label; select.appendChild(o);
}

function setup() {
  const convs = [...new Set(DATA.questions.map((q) => q.conv))];
  convs.forEach((c) => option($('f-conv'), c, c));
  const cats = {};
  DATA.questions.forEach((q) => { cats[q.cat] = q.catName; });
  Object.keys(cats).sort().forEach((c) => option($('f-cat'), c, c + ' ' + cats[c]));
  DATA.packs.forEach((p, i) => { option($('f-pack'), i, p.name); option($('p-a'), i, p.name); option($('p-b'), i, p.name); });
  DATA.classes.forEach((c) => option($('f-blame'), c, c));
  const head = $('head');
  head.innerHTML = '<th>question id</th><th>conv</th><th>category</th><th>question</th>' +
    DATA.packs.map((p) => '<th title="' + esc(p.label + ' ' + p.uri) + '">' + esc(p.name) + ': F1 · verdict · blame</th>').join('');
  const rows = [];
  for (const q of DATA.questions) {
    let cells = '<td class="qid">' + esc(q.id) + (q.ge && q.ge.kind ? ' <span class="ge" title="known gold error: ' + esc(q.ge.type) +
      '">&#9873;</span>' : '') + '</td><td class="nw">' + esc(q.conv) + '</td><td class="nw">' + q.cat + ' ' + esc(q.catName) +
      '</td><td>' + esc(q.q) + '</td>';
    for (const r of q.r) {
      cells += r ? '<td class="cell">' + fmt(r.scores[DATA.lexical]) + ' · ' + esc(r.verdict || '-') + ' · <span class="b-' +
        r.blame + '">' + r.blame + '</span></td>' : '<td class="cell">-</td>';
    }
    rows.push('<tr data-qid="' + esc(q.id) + '">' + cells + '</tr>');
  }
  $('rows').innerHTML = rows.join('');
  $('rows').addEventListener('click', onRowClick);
  $('a-right').addEventListener('click', onRowClick);
  $('b-right').addEventListener('click', onRowClick);
  for (const f of FIELDS) $('f-' + f).addEventListener('input', fromControls);
  $('p-a').addEventListener('input', fromControls);
  $('p-b').addEventListener('input', fromControls);
  $('tab-table').addEventListener('click', (e) => { e.preventDefault(); const s = hashState(); delete s.view; setHash(s); render(); });
  $('tab-paired').addEventListener('click', (e) => { e.preventDefault(); const s = hashState(); s.view = 'paired'; setHash(s); render(); });
  if (NP < 2) $('tab-paired').hidden = true;
  window.addEventListener('hashchange', render);
}
function onRowClick(event) {
  const tr = event.target.closest('tr[data-qid]');
  if (!tr) return;
  const s = hashState(); s.open = tr.dataset.qid; setHash(s); render();
}
function fromControls() {
  const s = hashState();
  for (const f of FIELDS) s[f] = $('f-' + f).value;
  if (NP > 1) { s.a = $('p-a').value; s.b = $('p-b').value; }
  setHash(s); render();
}

function packMatches(r, s) {
  if (!r) return false;
  const f1 = r.scores[DATA.lexical];
  if (s.min !== undefined && s.min !== '' && !(f1 >= Number(s.min))) return false;
  if (s.max !== undefined && s.max !== '' && !(f1 <= Number(s.max))) return false;
  if (s.verdict) { if (s.verdict === 'none' ? r.verdict !== null : r.verdict !== s.verdict) return false; }
  if (s.blame && r.blame !== s.blame) return false;
  return true;
}
function matches(q, s) {
  if (s.conv && q.conv !== s.conv) return false;
  if (s.cat && String(q.cat) !== String(s.cat)) return false;
  if (s.gold) { const kind = q.ge && q.ge.kind ? q.ge.kind : 'none'; if (kind !== s.gold) return false; }
  if (s.q) {
    const needle = s.q.toLowerCase();
    const hay = [q.id, q.q, q.gold || '', q.adv || '', ...q.r.map((r) => r ? r.pred : '')].join('\n').toLowerCase();
    if (!hay.includes(needle)) return false;
  }
  const packs = (s.pack !== undefined && s.pack !== '') ? [q.r[Number(s.pack)]] : q.r;
  return packs.some((r) => packMatches(r, s));
}

function render() {
  const s = hashState();
  for (const f of FIELDS) $('f-' + f).value = s[f] || '';
  const paired = s.view === 'paired' && NP > 1;
  $('table-view').hidden = paired;
  $('paired-view').hidden = !paired;
  let shown = 0;
  const trs = $('rows').children;
  for (let i = 0; i < trs.length; i++) {
    const ok = matches(DATA.questions[i], s);
    trs[i].hidden = !ok;
    trs[i].classList.toggle('open', trs[i].dataset.qid === s.open);
    if (ok) shown++;
  }
  $('count').textContent = shown + ' of ' + DATA.questions.length + ' questions';
  $('count').dataset.shown = shown;
  if (paired) renderPaired(s);
  renderPanel(s.open);
}

function renderPaired(s) {
  const a = Number(s.a || 0), b = Number(s.b !== undefined && s.b !== '' ? s.b : 1);
  $('p-a').value = a; $('p-b').value = b;
  $('paired-stats').textContent = (DATA.pairs || {})[a + ',' + b] || '';
  const basis = (i) => DATA.packs[i].judges.length ? 'judge ' + DATA.packs[i].judges[0] :
    'no judge: ' + (DATA.packs[i].noJudge ? DATA.packs[i].noJudge + ' (a lexical diagnostic)' : DATA.f1Basis);
  $('paired-basis').textContent = 'A (' + DATA.packs[a].name + '): ' + basis(a) + '; B (' + DATA.packs[b].name + '): ' + basis(b) + '.';
  const left = [], right = [];
  for (const q of DATA.questions) {
    const ra = q.r[a], rb = q.r[b];
    if (!ra || !rb || ra.correct === rb.correct || !matches(q, s)) continue;
    const row = '<tr class="pair" data-qid="' + esc(q.id) + '"><td class="qid">' + esc(q.id) + '</td><td>' + esc(q.q) +
      '</td><td>' + esc(ra.pred) + '</td><td>' + esc(rb.pred) + '</td></tr>';
    (ra.correct ? left : right).push(row);
  }
  const head = '<tr><th>question id</th><th>question</th><th>A answer</th><th>B answer</th></tr>';
  $('a-right').innerHTML = head + left.join('');
  $('b-right').innerHTML = head + right.join('');
  $('a-right-title').textContent = 'A (' + DATA.packs[a].name + ') right, B wrong (' + left.length + ')';
  $('b-right-title').textContent = 'B (' + DATA.packs[b].name + ') right, A wrong (' + right.length + ')';
}

function highlight(memory, evidence) {  // the memory as HTML, the gold evidence turns marked
  const spans = [];
  for (const e of evidence) {
    if (!e.text) continue;
    let at = memory.indexOf(e.text);
    while (at >= 0) { spans.push([at, at + e.text.length, e.id]); at = memory.indexOf(e.text, at + 1); }
  }
  spans.sort((x, y) => x[0] - y[0]);
  let out = '', pos = 0;
  for (const [start, end, id] of spans) {
    if (start < pos) continue;
    out += esc(memory.slice(pos, start)) + '<mark class="ev" title="evidence ' + esc(id) + '">' + esc(memory.slice(start, end)) + '</mark>';
    pos = end;
  }
  return [out + esc(memory.slice(pos)), spans.length];
}
function promptHtml(r, q) {
  const p = r.prompt;
  const tpl = text(p.tpl);
  if (tpl === null) return '<p class="bad">template not in the pack</p>';
  const ask = (part) => part.split('{question}').join(p.q || '');
  let body;
  if (p.memSlot) {
    const i = tpl.indexOf('{memory}');
    const memory = text(r.mem) || '';
    body = esc(ask(tpl.slice(0, i))) + highlight(memory, q.ev)[0] + esc(ask(tpl.slice(i + 8)));
  } else {
    body = esc(ask(tpl));
  }
  if (p.footer !== null && p.footer !== undefined) body += esc(text(p.footer));
  const system = p.system !== null && p.system !== undefined ? '<div>system: <code>' + esc(text(p.system)) + '</code></div>' : '';
  const check = p.ok ? '<span class="ok">sha256 matches ' + esc(p.as) + '</span>' : '<span class="bad">sha256 does not match ' + esc(p.as) + '</span>';
  return '<div>template <code>prompts/' + esc(p.name) + '</code> · ' + check + '</div>' + system + '<pre class="prompt">' + body + '</pre>';
}
function packPanel(r, i, q) {
  const title = esc(DATA.packs[i].name) + ' <small>' + esc(DATA.packs[i].label) + '</small>';
  if (!r) return '<div><h3>' + title + '</h3><p>not answered in this pack</p></div>';
  let h = '<div class="pack-walk" data-pack="' + i + '"><h3>' + title + '</h3><dl>' +
    '<dt>answer</dt><dd class="answer">' + esc(r.pred) + '</dd>' +
    '<dt>reply</dt><dd>' + esc(r.reply) + '</dd>' +
    Object.keys(r.scores).map((k) => '<dt>' + esc(k) + '</dt><dd>' + fmt(r.scores[k]) + '</dd>').join('') +
    '<dt>blame</dt><dd class="blame b-' + r.blame + '">' + r.blame + ' (by ' + esc(r.basis) + ')</dd>' +
    '<dt>evidence</dt><dd>stored ' + fmt(r.stored) + ' · given ' + fmt(r.given) + ' · answer used it ' + fmt(r.used) +
    (r.dropped.length ? ' (missing gold stems: ' + esc(r.dropped.join(', ')) + ')' : '') + '</dd></dl>';
  const cal = DATA.packs[i].calibration || {};
  h += '<h3>Judges</h3>' + Object.keys(cal).map((j) => '<p class="calibration">' + esc(j) + ': ' + esc(cal[j]) + '</p>').join('') +
    (r.verdicts.length ? '<ul class="verdicts">' + r.verdicts.map((v) => '<li>' + esc(v.judge) + ' pass ' +
    v.pass + ': <b class="verdict">' + esc(v.status) + '</b>' + (v.label !== null ? ' (label ' + esc(v.label) + ')' : '') +
    (v.error ? ' ' + esc(v.error) : '') + '</li>').join('') + '</ul>' : '<p>no judge</p>');
  h += '<h3>Prompt as sent</h3>' + (r.prompt ? promptHtml(r, q) : '<p>no prompt trace</p>');
  h += '<h3>Model calls</h3><ul>' + r.calls.map((c) => '<li>' + esc(c) + '</li>').join('') + '</ul>';
  if (r.hits) h += '<h3>Retrieved</h3><ol>' + r.hits.map((x) => '<li>' + esc(x[0]) + ' (' + fmt(x[1]) + ')</li>').join('') + '</ol>';
  if (r.agent) {
    const a = r.agent;
    h += '<h3>Agent (' + esc(a.mode) + ', ' + esc(a.status) + ', ' + fmt(a.wall) + ' s)</h3><div>usage ' + esc(JSON.stringify(a.usage)) +
      (a.notes ? ' · notes <code>' + esc(a.notes) + '</code>' : '') + '</div><ol>' + a.steps.map((x) => '<li>[' + esc(x.kind) +
      '] <code>' + esc(x.cmd) + '</code>' + (x.reads.length ? ' reads ' + esc(x.reads.join(', ')) : '') +
      (x.dia.length ? ' printed ' + esc(x.dia.join(', ')) : '') + '</li>').join('') + '</ol>';
  }
  if (r.mem !== null && !(r.prompt && r.prompt.memSlot)) {
    const [body, marks] = highlight(text(r.mem) || '', q.ev);
    h += '<h3>Memory (' + marks + ' evidence mark(s))</h3><pre class="memory">' + body + '</pre>';
  }
  return h + '</div>';
}
function goldError(ge) {  // the audit's finding (dial481/locomo-audit errors.json), flagged with its correction
  if (!ge) return '';
  if (!ge.kind) return '<p class="ge-note">' + esc(ge.note) + '</p>';
  const head = ge.kind === 'answer' ? 'Known gold error: the gold answer is wrong' : 'Known citation error: the gold answer stands, its evidence does not';
  return '<div class="gold-error"><h3>' + head + ' (' + esc(ge.audit) + ', ' + esc(ge.type) + ')</h3><dl>' +
    (ge.kind === 'answer' ? '<dt>corrected answer</dt><dd class="corrected">' + esc(ge.answer) + '</dd>' : '') +
    '<dt>corrected evidence</dt><dd><ul class="evidence">' + ge.evidence.map((e) => '<li><code>' + esc(e.id) + '</code> ' +
    esc(e.date || '') + ' ' + esc(e.text || '(no such turn)') + '</li>').join('') + '</ul></dd>' +
    '<dt>the audit\'s reasoning</dt><dd class="reasoning">' + esc(ge.reasoning) + '</dd></dl></div>';
}
function renderPanel(qid) {
  const panel = $('panel');
  const q = qid ? DATA.questions.find((x) => x.id === qid) : null;
  if (!q) { panel.hidden = true; panel.innerHTML = ''; return; }
  panel.hidden = false;
  let h = '<h2 data-qid="' + esc(q.id) + '">' + esc(q.id) + ' · ' + q.cat + ' ' + esc(q.catName) + '</h2>' +
    '<p class="question">' + esc(q.q) + '</p><dl><dt>gold</dt><dd class="gold">' + esc(q.gold === null ? '(none)' : q.gold) + '</dd>' +
    (q.adv ? '<dt>adversarial</dt><dd>' + esc(q.adv) + '</dd>' : '') + '</dl>' +
    '<h3>Gold evidence (joined after answering)</h3>' + (q.evNote ? '<p>' + esc(q.evNote) + '</p>' : '') +
    '<ul class="evidence">' + q.ev.map((e) => '<li><code>' + esc(e.id) + '</code> ' + esc(e.date || '') + ' ' + esc(e.text || '(no such turn)') +
    '</li>').join('') + '</ul>' + goldError(q.ge);
  h += '<div class="packs">' + q.r.map((r, i) => packPanel(r, i, q)).join('') + '</div>';
  panel.innerHTML = h;
  panel.scrollTop = 0;
  for (const pre of panel.querySelectorAll('pre')) {  // each text scrolled (inside itself) to its first evidence mark
    const mark = pre.querySelector('mark.ev');
    if (mark) pre.scrollTop = Math.max(0, mark.offsetTop - pre.offsetTop - 40);
  }
}

setup();
render();
"""
