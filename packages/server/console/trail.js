// Trail: the last seal and what waits to be sealed, the last digest published, the last verification.
import { api } from './api.js';
import { h } from './dom.js';
import { every } from './refresh.js';

const when = (iso) => (iso ? new Date(iso).toLocaleString() : '—');
const short = (hash) => h('code', { title: hash }, `${hash.slice(0, 16)}…`);

function row(label, ...value) {
  return h('tr', {}, h('th', { scope: 'row' }, label), h('td', {}, ...value));
}

async function loadTrail(root) {
  const trail = await api('/ops/trail');
  const lag = trail.sealLag.events === 0 ? 'nothing waits' : `${trail.sealLag.events} events, the oldest ${Math.round(trail.sealLag.seconds ?? 0)} s ago`;
  const verification = trail.lastVerification;
  const verdict = !verification
    ? h('span', { class: 'badge tone-review' }, 'never verified')
    : verification.findings === 0
      ? h('span', { class: 'badge tone-ok' }, 'clean')
      : h('span', { class: 'badge tone-review' }, `${verification.findings} findings: run rastro verify`);
  root.replaceChildren(
    h('h1', {}, 'Trail'),
    h('p', {}, 'Each event\'s hash chains to its stream\'s previous one; the sealer seals the log into blocks whose hashes chain; digests of the head, kept outside the database, let rastro verify prove nothing changed since.'),
    h('table', { class: 'facts' }, h('tbody', {},
      row('Last seal', trail.lastSeal ? h('span', {}, `block ${trail.lastSeal.block}, ${when(trail.lastSeal.sealedAt)} `, short(trail.lastSeal.hash)) : 'nothing sealed yet (rastro seal, or serve with RASTRO_SEALER=on)'),
      row('Waiting to be sealed', lag),
      row('Last digest published', trail.lastDigest ? h('span', {}, `block ${trail.lastDigest.block}, ${when(trail.lastDigest.publishedAt)} to ${trail.lastDigest.target}`) : 'none (RASTRO_DIGEST_PUBLISH)'),
      row('Last verification', verification ? h('span', {}, `${when(verification.finishedAt)} (${verification.full ? 'everything' : 'what changed'}) `, verdict) : verdict),
      row('Last clean verification', when(trail.lastCleanVerificationAt)),
    )),
  );
}

/** The trail's status, read again every 10 s while the page shows. */
export function renderTrail(root) {
  return every(10_000, () => loadTrail(root));
}
