// What each status means to an operator, and so its colour: one map for the badges, the chart
// lines and their legends. The colours themselves are the tone-* classes of console.css.
import { h } from './dom.js';

const TONE_OF = {
  // Settled as it should be.
  done: 'ok', captured: 'ok', completed: 'ok', published: 'ok', settled: 'ok',
  // Settled badly, or gone.
  failed: 'bad', dead: 'bad',
  // Not settled yet: the system is still finding out, or waits behind something.
  pending: 'waiting', uncertain: 'waiting', waiting: 'waiting',
  // A person has to decide.
  'needs-review': 'review', needs_review: 'review',
  // Work in flight.
  reserved: 'active', running: 'active',
  stopped: 'idle',
};

/** The tone of a status, whatever its case (`CAPTURED` and `captured` alike); `idle` for one it does not know. */
export function toneOf(status) {
  return TONE_OF[String(status ?? '').toLowerCase()] ?? 'idle';
}

/** The class that colours an element by what `status` means. */
export const toneClass = (status) => `tone-${toneOf(status)}`;

/** A status as a badge in its colour: `badge('CAPTURED')`, `badge('failed', ' — the error')`. */
export function badge(status, ...more) {
  return h('span', { class: `badge ${toneClass(status)}`, 'data-status': status }, status, ...more);
}
