// Audit: the latest audit's checks and findings, each finding linked to the row it names.
import { api } from './api.js';
import { h } from './dom.js';
import { every } from './refresh.js';

/** Where a finding's row is shown: a console page, or the API's own view of it. */
function linkOf(subject) {
  const id = encodeURIComponent(subject.id);
  switch (subject.type) {
    case 'run': return '#/runs';
    case 'effect': case 'event': case 'message': return '#/review';
    case 'relay': return '#/overview';
    case 'charge': return `/charges/${id}`;
    case 'order': return `/orders/${id}`;
    case 'account': return `/accounts/${id}`;
    default: return undefined;
  }
}

function age(seconds) {
  if (seconds === undefined || seconds === null) return '—';
  const s = Math.round(seconds);
  return s >= 86400 ? `${Math.floor(s / 86400)} d` : s >= 3600 ? `${Math.floor(s / 3600)} h` : s >= 60 ? `${Math.floor(s / 60)} min` : `${s} s`;
}

function subjectCell(subject) {
  const text = h('code', {}, `${subject.type} ${subject.id}`);
  const href = linkOf(subject);
  return href ? h('a', { href }, text) : text;
}

function checksTable(checks) {
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Check', 'What it proves', 'Examined', 'Findings', 'How'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, checks.map((c) => h('tr', { 'data-check': c.name },
      h('td', {}, c.name), h('td', {}, c.summary), h('td', {}, String(c.examined)),
      h('td', {}, h('span', { class: `badge ${c.findings > 0 ? 'tone-review' : 'tone-ok'}` }, String(c.findings))),
      h('td', {}, c.incremental ? 'since the last audit' : 'everything')))));
}

function findingsTable(findings) {
  if (findings.length === 0) return h('p', { class: 'empty' }, 'Nothing lost, doubled or left behind.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Check', 'Finding', 'Row', 'Age', 'What is wrong', 'What to do'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, findings.map((f) => h('tr', { 'data-finding': `${f.check}/${f.kind}` },
      h('td', {}, f.check), h('td', {}, h('code', {}, f.kind)), h('td', {}, subjectCell(f.subject)), h('td', {}, age(f.ageSeconds)),
      h('td', {}, f.detail), h('td', {}, f.action)))));
}

async function loadAudit(root) {
  const { audit, lastCleanAt } = await api('/ops/audit');
  const lastClean = h('p', {}, lastCleanAt ? `Last clean audit of every check: ${new Date(lastCleanAt).toLocaleString()}.` : 'No audit of every check has been clean yet.');
  if (!audit) {
    root.replaceChildren(h('h1', {}, 'Audit'), h('p', { class: 'empty' }, 'No audit yet: run rastro audit, or serve with RASTRO_AUDIT_INTERVAL_SECONDS.'), lastClean);
    return;
  }
  root.replaceChildren(
    h('h1', {}, 'Audit'),
    h('p', {}, `Audit ${audit.id}, finished ${new Date(audit.finishedAt).toLocaleString()}: ${audit.findings.length === 0 ? 'clean' : `${audit.findings.length} to act on`}${audit.complete ? '' : ' (some checks only)'}.`),
    lastClean,
    h('h2', {}, 'Findings'), findingsTable(audit.findings),
    h('h2', {}, 'Checks'), checksTable(audit.checks),
  );
}

/** The latest audit, read again every 30 s while the page shows (serve may audit on a schedule). */
export function renderAudit(root) {
  return every(30_000, () => loadAudit(root));
}
