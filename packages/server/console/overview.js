// Overview: the figures now, and their last hour as charts.
import { api } from './api.js';
import { lineChart } from './chart.js';
import { h, seconds } from './dom.js';
import { every } from './refresh.js';

function card(id, label, value, sub, alert = false) {
  return h('div', { class: `card${alert ? ' alert' : ''}`, 'data-figure': id },
    h('div', { class: 'label' }, label), h('div', { class: 'value' }, value), sub ? h('div', { class: 'sub' }, sub) : null);
}

const byType = (counts) => Object.entries(counts).filter(([, n]) => n > 0).map(([type, n]) => `${type}: ${n}`).join(', ');

function cards(f) {
  const relayLag = Math.max(0, ...f.relays.map((r) => r.lagSeconds ?? 0));
  const pending = f.relays.reduce((sum, r) => sum + r.pending, 0);
  return h('div', { class: 'cards' },
    card('relay-lag', 'Relay lag (oldest unpublished)', seconds(f.relays.length ? relayLag : null), `${pending} messages pending in ${f.relays.length} relay(s)`),
    f.processors.map((p) => card(`processor-lag.${p.processor}`, `${p.processor}: checkpoint lag`, `${p.eventsBehind} events`, `oldest ${seconds(p.secondsBehind)}`, p.eventsBehind > 0)),
    card('normalizer-lag', 'Normalizer lag', `${f.normalizer.eventsBehind} snapshots`, `oldest ${seconds(f.normalizer.secondsBehind)}`, f.normalizer.eventsBehind > 0),
    // The review queue's two figures: the review page lists exactly these.
    card('review.effects', 'Effects waiting for review', f.review.effects, 'uncertain or in review, charge captures apart', f.review.effects > 0),
    card('review.charges', 'Charges in review', f.review.charges, 'NEEDS_REVIEW, and PENDING ones whose capture is uncertain', f.review.charges > 0),
    card('effects.uncertain', 'Uncertain effects', f.effects.uncertain, 'every type, charge captures too'),
    card('effects.reserved', 'Reserved effects', f.effects.reserved, 'calls in flight'),
    card('effects.done', 'Done effects', f.effects.done),
    card('effects.needs-review', 'Effects in review', f.effects['needs-review'], byType(f.effectsNeedingReview) || 'past their deadline, provider could not say', f.effects['needs-review'] > 0),
    card('charges.NEEDS_REVIEW', 'NEEDS_REVIEW charges', f.charges.byStatus.NEEDS_REVIEW, 'reconciliation gave up: confirm at the acquirer'),
    card('charges.stalePending', 'Stale PENDING charges', f.charges.stalePending.count,
      `past the ${seconds(f.charges.stalePending.deadlineSeconds)} deadline${f.charges.stalePending.count > 0 ? `, oldest ${seconds(f.charges.stalePending.oldestSeconds)}` : ''}`, f.charges.stalePending.count > 0),
    card('charges.PENDING', 'PENDING charges', f.charges.byStatus.PENDING, 'capture not settled yet'),
    card('charges.CAPTURED', 'Captured charges', f.charges.byStatus.CAPTURED),
    card('charges.FAILED', 'Failed charges', f.charges.byStatus.FAILED),
    card('parked.events', 'Parked events', f.parked.events, Object.entries(f.parked.eventsByProcessor).map(([k, v]) => `${k}: ${v}`).join(', ') || 'none', f.parked.events > 0),
    card('parked.messages', 'Parked outbox messages', f.parked.messages, null, f.parked.messages > 0),
    card('readers.heldBack', 'Events held back from readers', f.readers.heldBack, `oldest open transaction ${seconds(f.readers.oldestWriterSeconds)}`, f.readers.heldBack > 0),
  );
}

const labelOf = (labels) => Object.values(labels).join(' ') || 'value';

function charts(timeline) {
  const byName = new Map();
  for (const series of timeline.series) {
    if (!byName.has(series.name)) byName.set(series.name, { help: series.help, lines: [] });
    // A series by state or status is drawn in that status's colour.
    const status = series.labels.state ?? series.labels.status;
    byName.get(series.name).lines.push({ label: labelOf(series.labels), values: series.values, status });
  }
  if (byName.size === 0) return h('p', { class: 'empty' }, 'No samples yet: the server samples the figures every 10 s.');
  return h('div', { class: 'charts' }, [...byName.entries()].map(([name, { help, lines }]) => lineChart(help, timeline.times, lines, name)));
}

export async function renderOverview(root) {
  const now = h('section', { 'aria-labelledby': 'now-title' }, h('h2', { id: 'now-title' }, 'Now'));
  const hour = h('section', { 'aria-labelledby': 'hour-title' }, h('h2', { id: 'hour-title' }, 'Last hour'));
  root.append(h('h1', {}, 'Overview'), now, hour);
  return every(10_000, async () => {
    const [figures, timeline] = await Promise.all([api('/ops/figures'), api('/ops/figures/timeline')]);
    now.replaceChildren(now.firstChild, cards(figures));
    hour.replaceChildren(hour.firstChild, charts(timeline));
  });
}
