// Review queue: uncertain effects and effects in review to resolve, charges in review to settle,
// parked events and outbox messages to retry or skip.
import { act, since } from './actions.js';
import { api } from './api.js';
import { h } from './dom.js';
import { every } from './refresh.js';
import { badge } from './status.js';
import { chargesTable } from './review-charges.js';

function effectsTable(effects, reload) {
  if (effects.length === 0) return h('p', { class: 'empty' }, 'No uncertain effects and none in review.');
  const resolve = (effect, as, button) => act({
    button, reload,
    title: as === 'done' ? 'Confirm it happened' : 'Release for retry',
    text: as === 'done'
      ? `Mark ${effect.effectType} of event ${effect.eventId} as done? Do this only when you checked with the provider that it happened: it will never be called again.`
      : `Release ${effect.effectType} of event ${effect.eventId}? The next run that reaches the event calls the provider again: do this only when you checked that it did not happen.`,
    okLabel: as === 'done' ? 'Mark done' : 'Release',
    destructive: as === 'retry',
    request: () => api(`/ops/effects/${encodeURIComponent(effect.key)}/resolve`, { method: 'POST', body: { as } }),
    describe: (r) => `Effect ${r.key}: ${r.before} → ${r.after}`,
  });
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Effect', 'Event', 'Run', 'State', 'Error', 'In this state since', 'Actions'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, effects.map((e) => h('tr', { 'data-effect': e.key },
      h('td', {}, h('code', {}, e.effectType)), h('td', {}, h('code', {}, e.eventId)), h('td', {}, e.runId),
      h('td', {}, badge(e.state)), h('td', {}, e.error ?? '—'), h('td', {}, since(e.stateSince)),
      h('td', {}, h('div', { class: 'row-actions' },
        h('button', { type: 'button', onclick: (ev) => resolve(e, 'done', ev.currentTarget) }, 'Confirm it happened'),
        // Only an event's effect can be released: one made on a request's path is refused.
        e.eventId ? h('button', { type: 'button', onclick: (ev) => resolve(e, 'retry', ev.currentTarget) }, 'Release for retry') : null))))));
}

// A parked event's effects as the ledger holds them, made by any run of its processor: "settled: notify done by
// run fix-1" once all are done, so a retry sends nothing again and only unparks it.
function ledgerEffects(row) {
  if (row.effects.length === 0) return '—';
  const each = row.effects.map((e) => `${e.effectType} ${e.state} ${e.state === 'done' ? 'by' : 'in'} run ${e.runId}`).join(', ');
  return row.settled ? [badge('settled'), ` ${each}`] : each;
}

const alreadyDone = (r) => (r.alreadyDone?.length ? `; already done, not sent again: ${r.alreadyDone.map((e) => `${e.effectType} (by run ${e.runId})`).join(', ')}` : '');

function parkedTable(rows, kind, reload) {
  if (rows.length === 0) return h('p', { class: 'empty' }, kind === 'event' ? 'No parked events.' : 'No parked outbox messages.');
  const idOf = (row) => (kind === 'event' ? row.eventId : row.messageId);
  const run = (row, action, button) => act({
    button, reload,
    title: `${action === 'retry' ? 'Retry' : 'Skip'} parked ${kind}`,
    text: action === 'retry'
      ? `Run ${kind === 'event' ? `stream ${row.streamId}` : `aggregate ${row.aggregateKey}`} again from its first parked ${kind}, in order?`
      : `Give up on ${kind} ${idOf(row)} (it will never be ${kind === 'event' ? 'handled' : 'published'}) and retry the rest of its ${kind === 'event' ? 'stream' : 'aggregate'}?`,
    okLabel: action === 'retry' ? 'Retry' : 'Skip it',
    destructive: action === 'skip',
    // An event is parked once per run (the live run, a replay fixing it): the action names both.
    request: () => api(kind === 'event' ? `/ops/parked-events/${encodeURIComponent(row.runId)}/${idOf(row)}/${action}` : `/ops/outbox/parked/${idOf(row)}/${action}`, { method: 'POST', body: {} }),
    describe: (r) => `${action === 'retry' ? 'Retried' : 'Skipped'} ${kind} ${idOf(row)}${kind === 'event' ? ` in run ${r.runId}` : ''}: ${r.handled ?? r.published} ${kind === 'event' ? 'handled' : 'published'}, ${r.stillParked} still parked${kind === 'event' ? alreadyDone(r) : ''}`,
  });
  const headings = kind === 'event' ? ['Processor', 'Run', 'Stream', 'Id', 'Reason', 'Effects', 'Error', 'Since', 'Actions'] : ['Relay', 'Aggregate', 'Id', 'Reason', 'Error', 'Since', 'Actions'];
  return h('table', {},
    h('thead', {}, h('tr', {}, headings.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows.map((row) => h('tr', kind === 'event' ? { 'data-parked-event': row.eventId, 'data-parked-run': row.runId } : { 'data-parked-message': row.messageId },
      h('td', {}, row.processor ?? row.relay), kind === 'event' ? h('td', {}, h('code', {}, row.runId)) : null,
      h('td', {}, h('code', {}, row.streamId ?? row.aggregateKey)), h('td', {}, h('code', {}, idOf(row))),
      h('td', {}, badge(row.reason)), kind === 'event' ? h('td', {}, ledgerEffects(row)) : null, h('td', {}, row.error ?? '—'), h('td', {}, since(row.parkedAt)),
      h('td', {}, h('div', { class: 'row-actions' },
        h('button', { type: 'button', onclick: (ev) => run(row, 'retry', ev.currentTarget) }, 'Retry'),
        h('button', { type: 'button', class: 'danger', onclick: (ev) => run(row, 'skip', ev.currentTarget) }, 'Skip')))))));
}

export async function renderReview(root) {
  const effects = h('section', { 'aria-labelledby': 'effects-title' });
  const charges = h('section', { 'aria-labelledby': 'charges-title' });
  const events = h('section', { 'aria-labelledby': 'parked-title' });
  const messages = h('section', { 'aria-labelledby': 'messages-title' });
  root.append(h('h1', {}, 'Review queue'), h('p', { id: 'review-result', class: 'muted', 'aria-live': 'polite' }), effects, charges, events, messages);
  const reload = async () => {
    // The server's one definition of the queue (queue=review), the same the overview's cards count.
    const [waiting, inReview, p, m] = await Promise.all([
      api('/ops/effects?queue=review&limit=1000'), api('/ops/charges?queue=review&limit=1000'), api('/ops/parked-events'), api('/ops/outbox/parked'),
    ]);
    const ofEvents = waiting.effects;
    const toReview = inReview.charges;
    effects.replaceChildren(h('h2', { id: 'effects-title' }, `Effects waiting for review (${ofEvents.length})`), effectsTable(ofEvents, reload));
    const lookUp = h('p', { class: 'muted' }, 'Look each one up at the acquirer by its idempotency key before you confirm. PENDING ones are still being asked about by reconciliation.');
    charges.replaceChildren(h('h2', { id: 'charges-title' }, `Charges in review (${toReview.length})`), ...(toReview.length ? [lookUp] : []), chargesTable(toReview, reload));
    events.replaceChildren(h('h2', { id: 'parked-title' }, `Parked events (${p.parked.length})`), parkedTable(p.parked, 'event', reload));
    messages.replaceChildren(h('h2', { id: 'messages-title' }, `Parked outbox messages (${m.parked.length})`), parkedTable(m.parked, 'message', reload));
  };
  // Reloading while a dialog is open would replace the button it returns focus to.
  return every(15_000, () => (document.querySelector('dialog[open]') ? undefined : reload()));
}
