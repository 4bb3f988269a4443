"""The board pages' style and script (plain CSS and JavaScript: no build step, nothing fetched).

The script reads the page's data block and builds the page with DOM calls only: every text of a
pack goes in as a text node or an attribute value, never as markup, and a link is set only where
its target is one of the board's own page names (`SAFE_HREF`). State lives in the URL hash
(`#locomo.sort=figure&locomo.dir=desc&locomo.judge=...&forest.base=...`), so a link names a view.
The forest plot pairs two packs from their figures' per-unit sums, as
`memorybench.board.tables.paired_from_units` does, with the t quantiles the page carries.
"""

from __future__ import annotations

__all__ = ["SCRIPT", "STYLE"]

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#fafbfc}
header{background:#fff;border-bottom:1px solid #d8dde6;padding:8px 14px}
h1{font-size:18px;margin:4px 0} h2{font-size:16px;margin:18px 0 6px} h3{font-size:14px;margin:14px 0 4px}
nav a{margin-right:14px}
main{padding:8px 14px}
table{border-collapse:collapse;background:#fff;margin:4px 0}
th,td{border-bottom:1px solid #e6e9ef;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f1f3f7;font-weight:600;font-size:12px}
th.sortable{cursor:pointer;user-select:none} th[aria-sort=ascending]::after{content:" \\25B2"} th[aria-sort=descending]::after{content:" \\25BC"}
td.num{white-space:nowrap;font-variant-numeric:tabular-nums}
.filters{display:flex;flex-wrap:wrap;gap:4px 14px;margin:4px 0}
.filters label{font-size:12px;color:#5a6475} .filters select{max-width:320px}
.mark{display:inline-block;background:#fff1e0;color:#8a4b00;border:1px solid #f0c890;border-radius:3px;padding:0 4px;margin:1px 2px;font-size:11px}
.same{color:#11703a;font-size:12px} .note{color:#5a6475;font-size:12px}
.count{color:#5a6475;font-size:12px}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 12px} dt{color:#5a6475} dd{margin:0;overflow-wrap:anywhere}
tr.differs td{background:#fff7ec}
svg text{font-size:11px;fill:#1d2330} svg .axis{stroke:#9aa3b2} svg .zero{stroke:#b3261e;stroke-dasharray:4 3}
svg .ci{stroke:#1f5fbf;stroke-width:2} svg .dot{fill:#1f5fbf} svg .pt{fill:#11703a;fill-opacity:.8}
"""

SCRIPT = r"""
'use strict';
const DATA = JSON.parse(document.getElementById('mb-board').textContent);
const SAFE_HREF = /^[A-Za-z0-9_.-]+\.html(#[A-Za-z0-9_.=&%-]*)?$/;
const SVGNS = 'http://www.w3.org/2000/svg';
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === 'href') { if (SAFE_HREF.test(String(v))) e.setAttribute('href', String(v)); }
    else if (k === 'class') e.className = String(v);
    else e.setAttribute(k, String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined) continue;
    e.appendChild(typeof kid === 'object' ? kid : document.createTextNode(String(kid)));
  }
  return e;
}
function sv(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}
const known = (x) => x !== null && x !== undefined && !Number.isNaN(x);
const f3 = (x) => known(x) ? Number(x).toFixed(3) : '-';
const pct = (x) => known(x) ? (100 * x).toFixed(1) + '%' : '?';
const signed = (x) => known(x) ? (x >= 0 ? '+' : '') + Number(x).toFixed(3) : '-';
function interval(f) {
  if (!f || !known(f.value)) return '-';
  return f3(f.value) + (known(f.low) ? ' [' + f3(f.low) + ', ' + f3(f.high) + ']' : ' (no interval)');
}

function hashState() {
  const out = {};
  for (const part of location.hash.replace(/^#/, '').split('&')) {
    if (!part) continue;
    const i = part.indexOf('=');
    out[decodeURIComponent(i < 0 ? part : part.slice(0, i))] = i < 0 ? '' : decodeURIComponent(part.slice(i + 1));
  }
  return out;
}
function setState(changes) {
  const s = Object.assign(hashState(), changes);
  const parts = Object.keys(s).filter((k) => s[k] !== '' && s[k] !== null && s[k] !== undefined)
    .map((k) => encodeURIComponent(k) + '=' + encodeURIComponent(s[k]));
  history.replaceState(null, '', parts.length ? '#' + parts.join('&') : location.pathname + location.search);
  render();
}

const runHref = (e) => DATA.views ? e.run_page : null;
const COLUMNS = [
  {key: 'system', label: () => 'system', sort: (e) => e.system.toLowerCase(), cell: (e) => el('a', {href: e.system_page, class: 'system'}, e.system)},
  {key: 'figure', label: (t) => (t.figure_name || 'judge figure') + ' [95% interval]', sort: (e) => e.figure ? e.figure.value : null,
   cell: (e) => e.figure ? el('a', {href: runHref(e), class: 'figure', title: e.figure.method}, interval(e.figure)) : '-'},
  {key: 'n', label: () => 'n (units)', sort: (e) => (e.figure || e.lexical || {}).n,
   cell: (e) => { const f = e.figure || e.lexical; return f ? f.n + ' (' + f.units + ')' : '-'; }},
  {key: 'judge', label: () => 'judge', sort: (e) => e.judge, cell: (e) => e.judge},
  {key: 'far', label: () => 'judge accepts wrong answers (vague / specific)', sort: (e) => e.far_vague,
   cell: (e) => (!known(e.far_vague) && !known(e.far_specific)) ? 'not calibrated' : pct(e.far_vague) + ' / ' + pct(e.far_specific)},
  {key: 'lexical', label: (t) => (t.lexical_name || 'lexical') + ' [95% interval]', sort: (e) => e.lexical ? e.lexical.value : null,
   cell: (e) => e.lexical ? el('a', {href: runHref(e), class: 'lexical', title: e.lexical.method}, interval(e.lexical)) : '-'},
  {key: 'cost', label: () => 'cost / question', sort: (e) => e.cost, cell: (e) => known(e.cost) ? '$' + e.cost.toFixed(5) : 'unknown'},
  {key: 'latency', label: () => 'latency p50 / p95 (s)', sort: (e) => e.latency_p50,
   cell: (e) => known(e.latency_p50) ? e.latency_p50.toFixed(2) + ' / ' + e.latency_p95.toFixed(2) : 'unknown'},
  {key: 'context', label: () => 'context tokens / question', sort: (e) => e.context_tokens,
   cell: (e) => known(e.context_tokens) ? Math.round(e.context_tokens) : 'unknown'},
  {key: 'length', label: () => 'answer length mean / p95', sort: (e) => e.answer_length_mean,
   cell: (e) => known(e.answer_length_mean) ? e.answer_length_mean.toFixed(1) + ' / ' + e.answer_length_p95 : '-'},
  {key: 'marks', label: () => 'protocol differs in', sort: (e) => e.marks.length, cell: (e, t) => marks(e, t)},
];
function marks(e, t) {
  if (!e.marks.length) return el('span', {class: 'same'}, 'same as the reference');
  return e.marks.map((f) => el('span', {class: 'mark', 'data-field': f,
    title: t.fields[f] + ': ' + e.contract[f] + ' (reference: ' + t.reference[f] + ')'}, t.fields[f]));
}
function compare(a, b) {
  const na = !known(a) || a === '', nb = !known(b) || b === '';
  if (na || nb) return na === nb ? 0 : (na ? 1 : -1);  // unknown last, either way
  return a < b ? -1 : (a > b ? 1 : 0);
}
function visible(t, s) {
  const b = t.benchmark;
  let rows = t.entries.filter((e) => Object.keys(t.filters).every((f) => !s[b + '.' + f] || String(e.contract[f]) === s[b + '.' + f]));
  const col = COLUMNS.find((c) => c.key === s[b + '.sort']);
  if (col) {
    const dir = s[b + '.dir'] === 'desc' ? -1 : 1;
    rows = rows.map((e, i) => [e, i]).sort((x, y) => {
      const c = compare(col.sort(x[0]), col.sort(y[0]));
      return (c === 0 ? x[1] - y[1] : (known(col.sort(x[0])) && known(col.sort(y[0])) ? dir * c : c));
    }).map((x) => x[0]);
  }
  return rows;
}

function tableSection(t, linkTitle) {
  const b = t.benchmark;
  const box = el('section', {class: 'board-table', id: 'table-' + b, 'data-benchmark': b});
  box.appendChild(el('h2', {}, linkTitle ? el('a', {href: t.page, class: 'benchmark-link'}, t.title) : t.title + ': every system'));
  const form = el('form', {class: 'filters', id: 'filters-' + b});
  for (const f of Object.keys(t.filters)) {
    const select = el('select', {id: 'filter-' + b + '-' + f, 'data-field': f}, el('option', {value: ''}, 'any'),
      t.filters[f].map((v) => el('option', {value: v}, v)));
    select.addEventListener('change', () => setState({[b + '.' + f]: select.value}));
    form.appendChild(el('label', {}, t.fields[f] + ' ', select));
  }
  form.addEventListener('submit', (ev) => ev.preventDefault());
  box.appendChild(form);
  const head = el('tr', {});
  for (const c of COLUMNS) {
    const th = el('th', {class: 'sortable', 'data-col': c.key}, c.label(t));
    th.addEventListener('click', () => {
      const s = hashState();
      const dir = s[b + '.sort'] === c.key && s[b + '.dir'] !== 'desc' ? 'desc' : 'asc';
      setState({[b + '.sort']: c.key, [b + '.dir']: dir});
    });
    head.appendChild(th);
  }
  box.appendChild(el('table', {class: 'board', id: 'board-' + b}, el('thead', {}, head), el('tbody', {id: 'rows-' + b})));
  box.appendChild(el('p', {class: 'count', id: 'count-' + b}));
  box.appendChild(el('p', {class: 'note'}, 'A figure links to its run in the viewer (every question); a system to its page. ' +
    'The reference contract is each field\'s most frequent value in this table; a mark names each field in which an entry differs ' +
    '(answer length and context tokens: more than 2x from the median).'));
  return box;
}
function fillTable(t, s) {
  const b = t.benchmark;
  const rows = visible(t, s);
  const body = document.getElementById('rows-' + b);
  body.replaceChildren(...rows.map((e) => el('tr', {'data-id': e.id, 'data-key': e.key},
    COLUMNS.map((c) => el('td', {class: c.key === 'system' || c.key === 'judge' || c.key === 'marks' ? c.key : 'num ' + c.key}, c.cell(e, t))))));
  for (const th of document.querySelectorAll('#board-' + b + ' th')) {
    if (th.dataset.col === s[b + '.sort']) th.setAttribute('aria-sort', s[b + '.dir'] === 'desc' ? 'descending' : 'ascending');
    else th.removeAttribute('aria-sort');
  }
  for (const select of document.querySelectorAll('#filters-' + b + ' select')) select.value = s[b + '.' + select.dataset.field] || '';
  const count = document.getElementById('count-' + b);
  count.textContent = rows.length + ' of ' + t.entries.length + ' entries (a pack under each of its judges)';
  count.dataset.shown = rows.length;
}

function paired(a, b) {  // B minus A over the units whose questions agree (tables.paired_from_units)
  const common = Object.keys(a).filter((u) => u in b && a[u][2] === b[u][2] && a[u][1] === b[u][1]).sort();
  let n = 0, sum = 0;
  for (const u of common) { n += a[u][1]; sum += b[u][0] - a[u][0]; }
  if (!n) return {units: 0, n: 0, difference: null, note: 'no unit with the same questions in both'};
  const mean = sum / n, g = common.length;
  if (g < 2) return {units: g, n: n, difference: mean, note: 'one unit in common: no interval'};
  let ss = 0;
  for (const u of common) { const r = (b[u][0] - a[u][0]) - a[u][1] * mean; ss += r * r; }
  const se = Math.sqrt(g / (g - 1) * ss) / n;
  const t = (DATA.t && DATA.t[g - 1]) || 1.96;
  return {units: g, n: n, difference: mean, low: mean - t * se, high: mean + t * se};
}
function forestSection(t) {
  const box = el('section', {id: 'forest'}, el('h2', {}, 'Differences against a baseline, paired by question'));
  const metric = el('select', {id: 'forest-metric'}, el('option', {value: 'figure'}, t.figure_name || 'judge figure'),
    el('option', {value: 'lexical'}, t.lexical_name || 'lexical'));
  const base = el('select', {id: 'forest-base'});
  metric.addEventListener('change', () => setState({'forest.metric': metric.value, 'forest.base': ''}));
  base.addEventListener('change', () => setState({'forest.base': base.value}));
  box.appendChild(el('p', {class: 'filters'}, el('label', {}, 'figure ', metric), el('label', {}, 'baseline ', base)));
  box.appendChild(el('div', {id: 'forest-plot'}));
  box.appendChild(el('table', {id: 'forest-table'}));
  box.appendChild(el('p', {class: 'note'}, 'Each line: the entry minus the baseline over the units (conversations, or questions) ' +
    'whose questions agree in both, with the cluster-robust t interval (95%) over those units; marks name the contract fields in ' +
    'which the entry differs from the reference.'));
  return box;
}
function fillForest(t, s) {
  const m = s['forest.metric'] === 'lexical' ? 'lexical' : 'figure';
  const have = t.entries.filter((e) => e[m] && e[m].by_unit);
  const base = document.getElementById('forest-base');
  document.getElementById('forest-metric').value = m;
  base.replaceChildren(...have.map((e) => el('option', {value: e.id}, e.system + ' · ' + e.judge)));
  // by default the entry over the most units (a partial pack pairs on few)
  const b = have.find((e) => e.id === s['forest.base']) || have.slice().sort((x, y) => y[m].units - x[m].units)[0];
  const plot = document.getElementById('forest-plot'), table = document.getElementById('forest-table');
  if (!b) { plot.replaceChildren(el('p', {class: 'note'}, 'no entry has this figure')); table.replaceChildren(); return; }
  base.value = b.id;
  const lines = have.filter((e) => e.id !== b.id).map((e) => [e, paired(b[m].by_unit, e[m].by_unit)]);
  const vals = [0];
  for (const [, d] of lines) for (const x of [d.difference, d.low, d.high]) if (known(x)) vals.push(x);
  const lo = Math.min(...vals), hi = Math.max(...vals), pad = (hi - lo) * 0.08 || 0.05;
  const W = 900, L = 360, R = 20, H = 28 + 22 * lines.length;
  const x = (v) => L + (v - (lo - pad)) / ((hi + pad) - (lo - pad)) * (W - L - R);
  const svg = sv('svg', {width: W, height: H + 20, viewBox: '0 0 ' + W + ' ' + (H + 20), role: 'img'});
  svg.appendChild(sv('title', {}, 'minus ' + b.system));
  svg.appendChild(sv('line', {class: 'zero', x1: x(0), x2: x(0), y1: 10, y2: H}));
  lines.forEach(([e, d], i) => {
    const y = 24 + 22 * i;
    svg.appendChild(sv('text', {x: 4, y: y + 4}, (e.system + ' · ' + e.judge).slice(0, 58) + (e.marks.length ? ' (≠ ' + e.marks.join(', ') + ')' : '')));
    if (known(d.low)) svg.appendChild(sv('line', {class: 'ci', x1: x(d.low), x2: x(d.high), y1: y, y2: y}));
    if (known(d.difference)) svg.appendChild(sv('circle', {class: 'dot', cx: x(d.difference), cy: y, r: 4}));
  });
  for (const v of [lo - pad, 0, hi + pad]) svg.appendChild(sv('text', {x: x(v) - 14, y: H + 14}, signed(v)));
  plot.replaceChildren(el('p', {}, 'minus ' + b.system + ' · ' + b.judge + ' (' + interval(b[m]) + ')'), svg);
  table.replaceChildren(el('tr', {}, ['entry', 'judge', 'difference [95% interval]', 'units', 'questions', 'differs in'].map((h) => el('th', {}, h))),
    ...lines.map(([e, d]) => el('tr', {'data-id': e.id}, el('td', {}, e.system), el('td', {}, e.judge),
      el('td', {class: 'num diff'}, signed(d.difference) + (known(d.low) ? ' [' + signed(d.low) + ', ' + signed(d.high) + ']' : ' (' + (d.note || '') + ')')),
      el('td', {class: 'num'}, d.units), el('td', {class: 'num'}, d.n), el('td', {}, e.marks.join(', ') || '-'))));
}
function costSection(t) {
  const box = el('section', {id: 'cost'}, el('h2', {}, (t.figure_name || 'figure') + ' against cost per question'));
  const pts = t.entries.filter((e) => known(e.cost) && e.cost > 0 && (e.figure || e.lexical));
  const unknown = t.entries.filter((e) => !known(e.cost)).map((e) => e.system);
  if (!pts.length) {
    box.appendChild(el('p', {class: 'note'}, 'no entry has a known cost per question (a price for every call it made)'));
  } else {
    const xs = pts.map((e) => e.cost), ys = pts.map((e) => (e.figure || e.lexical).value);
    const log = Math.max(...xs) / Math.min(...xs) > 10;
    const fx = (v) => log ? Math.log10(v) : v;
    const x0 = Math.min(...xs.map(fx)), x1 = Math.max(...xs.map(fx)), y0 = Math.min(0, ...ys), y1 = Math.max(1, ...ys);
    const W = 640, H = 320, P = 40;
    const px = (v) => P + (x1 === x0 ? 0.5 : (fx(v) - x0) / (x1 - x0)) * (W - 2 * P), py = (v) => H - P - (v - y0) / (y1 - y0) * (H - 2 * P);
    const svg = sv('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img'});
    svg.appendChild(sv('line', {class: 'axis', x1: P, x2: W - P, y1: H - P, y2: H - P}));
    svg.appendChild(sv('line', {class: 'axis', x1: P, x2: P, y1: P, y2: H - P}));
    svg.appendChild(sv('text', {x: W / 2 - 80, y: H - 8}, 'cost per question (USD' + (log ? ', log axis' : '') + ')'));
    pts.forEach((e, i) => {
      const c = sv('circle', {class: 'pt', cx: px(xs[i]), cy: py(ys[i]), r: 5});
      c.appendChild(sv('title', {}, e.system + ': ' + f3(ys[i]) + ' at $' + xs[i].toFixed(5)));
      svg.appendChild(c);
      svg.appendChild(sv('text', {x: px(xs[i]) + 7, y: py(ys[i]) + 4}, e.system.slice(0, 40)));
    });
    box.appendChild(svg);
  }
  if (unknown.length) box.appendChild(el('p', {class: 'note'}, 'cost unknown: ' + [...new Set(unknown)].join('; ')));
  return box;
}
function sensitivitySection(s) {
  const box = el('section', {id: 'sensitivity'}, el('h2', {}, 'Judge sensitivity: each system\'s rank under each judge'));
  const head = el('tr', {}, el('th', {}, 'system'), s.judges.map((j) => el('th', {'data-judge': j.id}, j.judge)), el('th', {}, 'places moved'));
  const rows = s.rows.map((r) => el('tr', {'data-key': r.key}, el('td', {}, r.system), s.judges.map((j) => {
    const c = r.cells[j.id];
    return el('td', {class: 'num', 'data-judge': j.id, 'data-rank': c ? c.rank : ''}, c ? interval(c) + ' · rank ' + c.rank + ' of ' + c.of : 'not judged');
  }), el('td', {class: 'num moved'}, known(r.places_moved) ? r.places_moved : '-')));
  box.appendChild(el('table', {id: 'sensitivity-table'}, head, ...rows));
  box.appendChild(el('p', {class: 'note'}, 'Rank 1 is the highest figure among the packs that judge judged; ties share the better rank. ' +
    'Places moved: the worst rank minus the best over the judges that judged the system.'));
  return box;
}
function contractSection(t) {
  return el('section', {id: 'reference'}, el('h2', {}, 'Reference contract'),
    el('dl', {}, Object.keys(t.fields).map((f) => [el('dt', {}, t.fields[f]), el('dd', {}, t.reference[f] === null ? 'unknown' : t.reference[f])])));
}
function systemPage() {
  const r = DATA.row;
  const main = document.getElementById('main');
  main.appendChild(el('p', {}, 'benchmark ', el('a', {href: DATA.benchmark.page}, DATA.benchmark.title),
    DATA.views ? [' · ', el('a', {href: DATA.entries[0].run_page, id: 'run-link'}, 'every question in the viewer')] : []));
  main.appendChild(el('dl', {}, ['run_id', 'uri', 'experiment', 'questions', 'questions_total', 'gold_wrong'].map((k) =>
    [el('dt', {}, k.replace('_', ' ')), el('dd', {}, known(r[k]) ? r[k] : '-')])));
  for (const e of DATA.entries) {
    main.appendChild(el('h2', {}, 'under ' + e.judge));
    main.appendChild(el('p', {}, (e.figure ? (e.figure.name + ' ' + interval(e.figure) + ', n ' + e.figure.n + ' (' + e.figure.method + ')') : 'no judge') +
      (e.lexical ? '; ' + e.lexical.name + ' ' + interval(e.lexical) : '')));
    main.appendChild(el('table', {class: 'contract'}, el('tr', {}, el('th', {}, 'field'), el('th', {}, 'this entry'), el('th', {}, 'reference')),
      Object.keys(DATA.fields).map((f) => el('tr', {class: e.marks.includes(f) ? 'differs' : '', 'data-field': f},
        el('td', {}, DATA.fields[f]), el('td', {}, e.contract[f]), el('td', {}, DATA.reference[f] === null ? 'unknown' : DATA.reference[f])))));
  }
}

function setup() {
  const nav = document.getElementById('nav');
  for (const n of DATA.nav || []) nav.appendChild(el('a', {href: n.href}, n.text));
  const main = document.getElementById('main');
  if (DATA.page === 'system') { systemPage(); return; }
  if (DATA.page === 'index') main.appendChild(el('p', {class: 'note'}, DATA.packs + ' pack(s); one table per benchmark.'));
  for (const t of DATA.tables) main.appendChild(tableSection(t, DATA.page === 'index'));
  if (DATA.page === 'benchmark') {
    const t = DATA.tables[0];
    main.appendChild(forestSection(t));
    main.appendChild(costSection(t));
    main.appendChild(sensitivitySection(DATA.sensitivity));
    main.appendChild(contractSection(t));
  }
  window.addEventListener('hashchange', render);
}
function render() {
  if (DATA.page === 'system') return;
  const s = hashState();
  for (const t of DATA.tables) fillTable(t, s);
  if (DATA.page === 'benchmark') fillForest(DATA.tables[0], s);
  document.body.dataset.rendered = '1';
}
setup();
render();
"""
