// Line charts drawn as SVG: one chart per gauge, a line per label set.
import { h, svg } from './dom.js';
import { toneClass } from './status.js';

const W = 340;
const H = 120;
const PAD = { left: 34, right: 8, top: 8, bottom: 18 };
// A line that shows a status takes the status's colour; others (relays, processors, effect
// types) take one of the series colours, none of which is a status colour.
const SERIES = 5;
const colourOf = (line, i) => (line.status === undefined ? `series-${i % SERIES}` : toneClass(line.status));

function niceMax(value) {
  if (value <= 0) return 1;
  const step = 10 ** Math.floor(Math.log10(value));
  return Math.ceil(value / step) * step;
}

const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
const short = (n) => (n >= 10_000 ? `${Math.round(n / 1000)}k` : Number.isInteger(n) ? String(n) : n.toFixed(1));

/** A chart of `lines` ({ label, values, status? }) over `times` (epoch ms). */
export function lineChart(title, times, lines, metric) {
  const all = lines.flatMap((line) => line.values.filter((v) => v !== null));
  const max = niceMax(Math.max(0, ...all));
  const t0 = times[0] ?? Date.now();
  const t1 = Math.max(times[times.length - 1] ?? t0, t0 + 1);
  const x = (t) => PAD.left + ((t - t0) / (t1 - t0)) * (W - PAD.left - PAD.right);
  const y = (v) => H - PAD.bottom - (v / max) * (H - PAD.top - PAD.bottom);
  const last = lines.map((line) => [...line.values].reverse().find((v) => v !== null));
  const summary = lines.map((line, i) => `${line.label}: ${last[i] ?? 'no data'}`).join('; ');
  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `${title}. Latest: ${summary || 'no data yet'}` },
    svg('line', { class: 'grid', x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0) }),
    svg('line', { class: 'grid', x1: PAD.left, x2: W - PAD.right, y1: y(max), y2: y(max) }),
    svg('text', { class: 'axis', x: PAD.left - 4, y: y(max) + 4, 'text-anchor': 'end' }, short(max)),
    svg('text', { class: 'axis', x: PAD.left - 4, y: y(0) + 3, 'text-anchor': 'end' }, '0'),
    svg('text', { class: 'axis', x: PAD.left, y: H - 4 }, times.length ? clock(t0) : ''),
    svg('text', { class: 'axis', x: W - PAD.right, y: H - 4, 'text-anchor': 'end' }, times.length ? clock(t1) : 'no samples yet'));
  lines.forEach((line, i) => {
    let d = '';
    let pen = false;
    line.values.forEach((v, j) => {
      if (v === null) return void (pen = false);
      d += `${pen ? 'L' : 'M'}${x(times[j]).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
    });
    // A single sample is a dot, not an invisible line.
    if (line.values.filter((v) => v !== null).length === 1) {
      const j = line.values.findIndex((v) => v !== null);
      chart.append(svg('circle', { class: colourOf(line, i), cx: x(times[j]), cy: y(line.values[j]), r: 2.5 }));
    }
    chart.append(svg('path', { class: `line ${colourOf(line, i)}`, 'data-line': line.label, d, 'stroke-width': 1.8, 'stroke-linejoin': 'round' }));
  });
  const legend = h('ul', { class: 'legend' }, lines.map((line, i) => {
    return h('li', { 'data-line': line.label }, h('i', { class: colourOf(line, i) }), `${line.label} `, h('strong', {}, last[i] === undefined ? '—' : short(last[i])));
  }));
  return h('figure', { class: 'chart', 'data-metric': metric }, h('h3', {}, title), metric ? h('p', { class: 'metric' }, h('code', {}, metric)) : null, chart, legend);
}
