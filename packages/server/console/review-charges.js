// Charges in review: the capture of each is an effect the acquirer could not account for. A person
// checks with the acquirer, then confirms captured (done) or not captured (failed). Never "retry":
// the capture was made on a request's path, and an acquirer capture is not repeated blindly.
import { act, since } from './actions.js';
import { api } from './api.js';
import { h } from './dom.js';
import { badge } from './status.js';

const STATUS_OF_STATE = { reserved: 'PENDING', uncertain: 'PENDING', done: 'CAPTURED', failed: 'FAILED', 'needs-review': 'NEEDS_REVIEW' };
const amount = (charge) => `${(charge.amountCents / 100).toFixed(2)} ${charge.currency}`;

export function chargesTable(charges, reload) {
  if (charges.length === 0) return h('p', { class: 'empty' }, 'No charges in review.');
  const resolve = (charge, as, button) => act({
    button, reload,
    title: as === 'done' ? 'Confirm captured' : 'Confirm not captured',
    text: as === 'done'
      ? `Mark charge ${charge.id} (${amount(charge)}, customer ${charge.customerId}, key ${charge.idempotencyKey}) as CAPTURED? Do this only when the acquirer shows the capture: ChargeCaptured is published and nothing captures again.`
      : `Mark charge ${charge.id} (${amount(charge)}, customer ${charge.customerId}, key ${charge.idempotencyKey}) as FAILED? Do this only when the acquirer shows no capture for the key: ChargeFailed is published and it is never captured again.`,
    okLabel: as === 'done' ? 'Mark captured' : 'Mark not captured',
    destructive: as === 'failed',
    request: () => api(`/ops/effects/${encodeURIComponent(`charge:${charge.id}`)}/resolve`, { method: 'POST', body: { as } }),
    describe: (r) => `Charge ${charge.id}: ${STATUS_OF_STATE[r.before]} → ${STATUS_OF_STATE[r.after]}`,
  });
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Charge', 'Amount', 'Customer', 'Idempotency key', 'Status', 'Reason', 'In this status since', 'Actions'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, charges.map((c) => h('tr', { 'data-charge': c.id },
      h('td', {}, h('code', {}, c.id)), h('td', { class: 'num' }, amount(c)), h('td', {}, c.customerId), h('td', {}, h('code', {}, c.idempotencyKey)),
      h('td', {}, badge(c.status)), h('td', {}, c.reason ?? '—'), h('td', {}, since(c.statusSince)),
      h('td', {}, h('div', { class: 'row-actions' },
        h('button', { type: 'button', onclick: (ev) => resolve(c, 'done', ev.currentTarget) }, 'Confirm captured'),
        h('button', { type: 'button', class: 'danger', onclick: (ev) => resolve(c, 'failed', ev.currentTarget) }, 'Confirm not captured')))))));
}
