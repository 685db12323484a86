// The diff of a simulate run: per key before → after, totals, a filter, CSV export.
import { api } from './api.js';
import { announce, h, json } from './dom.js';
import { reloadPage } from './refresh.js';

const PAGE = 50;

export async function renderDiff(root, runId) {
  const run = await api(`/ops/runs/${encodeURIComponent(runId)}`);
  const state = { projection: '', key: '', offset: 0 };
  const totals = h('div', { class: 'cards', id: 'diff-totals' });
  const table = h('div', { id: 'diff-rows' });
  const pager = h('div', { class: 'pager', id: 'diff-pager' });
  const failures = h('section', { id: 'diff-failures', 'aria-labelledby': 'diff-failures-title' });
  const projection = h('select', { id: 'diff-projection', name: 'projection' }, h('option', { value: '' }, 'all'));
  const key = h('input', { id: 'diff-key', name: 'key', type: 'search', placeholder: 'text in the key' });
  const filter = h('form', { class: 'inline', role: 'search', 'aria-label': 'Filter the diff' },
    h('div', {}, h('label', { for: 'diff-projection' }, 'Projection'), projection),
    h('div', {}, h('label', { for: 'diff-key' }, 'Key contains'), key),
    h('button', { type: 'submit' }, 'Filter'),
    h('button', { type: 'button', id: 'diff-csv', onclick: () => exportCsv() }, 'Export CSV'));
  root.append(
    h('p', {}, h('a', { href: '#/runs' }, '← Replay runs')),
    h('h1', {}, 'Diff of ', h('code', {}, runId)),
    h('p', { class: 'muted' }, `${run.processor} · ${run.simulate ? 'simulate' : 'real replay (no diff is recorded)'} · ${run.status} · ${run.done} of ${run.total ?? '?'} events`),
    totals, failures, h('h2', {}, 'Keys'), filter, pager, table);

  const query = (extra = {}) => {
    const params = new URLSearchParams();
    if (state.projection) params.set('projection', state.projection);
    if (state.key) params.set('key', state.key);
    for (const [name, value] of Object.entries(extra)) params.set(name, String(value));
    return params.toString();
  };

  async function exportCsv() {
    try {
      const text = await api(`/ops/runs/${encodeURIComponent(runId)}/diff.csv?${query()}`);
      const link = h('a', { href: URL.createObjectURL(new Blob([text], { type: 'text/csv' })), download: `${runId}-diff.csv` });
      document.body.append(link);
      link.click();
      link.remove();
      announce('CSV exported');
    } catch (err) {
      announce(`Export failed: ${err.message}`, 'error');
    }
  }

  async function load() {
    const page = await api(`/ops/runs/${encodeURIComponent(runId)}/diff?${query({ limit: PAGE, offset: state.offset })}`);
    const added = page.totals.reduce((sum, t) => sum + t.added, 0);
    const changed = page.totals.reduce((sum, t) => sum + t.changed, 0);
    totals.replaceChildren(
      h('div', { class: 'card', 'data-total': 'keys' }, h('div', { class: 'label' }, 'Keys the run would write'), h('div', { class: 'value' }, added + changed)),
      h('div', { class: 'card', 'data-total': 'added' }, h('div', { class: 'label' }, 'New keys'), h('div', { class: 'value' }, added)),
      h('div', { class: 'card', 'data-total': 'changed' }, h('div', { class: 'label' }, 'Changed keys'), h('div', { class: 'value' }, changed)),
      ...page.totals.map((t) => h('div', { class: 'card' }, h('div', { class: 'label' }, t.projection), h('div', { class: 'value' }, t.added + t.changed), h('div', { class: 'sub' }, `${t.added} new, ${t.changed} changed`))));
    // A dry run's failures are its own record: shown here, never in the review queue or the figures.
    const failed = page.failures ?? { total: 0, rows: [] };
    failures.replaceChildren(...(failed.total === 0 ? [] : [
      h('h2', { id: 'diff-failures-title' }, `Events the run could not handle (${failed.total})`),
      h('p', { class: 'muted' }, 'A simulate run parks nothing: fix the handler before the real run, where these would be parked for review.'),
      h('table', {},
        h('thead', {}, h('tr', {}, ['Stream', 'Event', 'Reason', 'Error'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, failed.rows.map((f) => h('tr', { 'data-failure': f.eventId },
          h('td', {}, h('code', {}, f.streamId)), h('td', {}, h('code', {}, f.eventId)), h('td', {}, f.reason), h('td', {}, f.error ?? '—'))))),
    ]));
    if (projection.options.length === 1) projection.append(...page.totals.map((t) => h('option', { value: t.projection }, t.projection)));
    table.replaceChildren(page.rows.length === 0
      ? h('p', { class: 'empty' }, 'No keys match.')
      : h('table', {},
        h('thead', {}, h('tr', {}, ['Projection', 'Key', 'Before', '', 'After'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, page.rows.map((row) => h('tr', { 'data-key': row.key },
          h('td', {}, row.projection), h('td', {}, h('code', {}, row.key)),
          h('td', {}, h('pre', {}, row.before === null ? '(none)' : json(row.before))), h('td', { class: 'arrow', 'aria-label': 'becomes' }, '→'),
          h('td', {}, h('pre', {}, json(row.after))))))));
    const last = Math.min(state.offset + PAGE, page.matching);
    pager.replaceChildren(
      h('button', { type: 'button', disabled: state.offset === 0, onclick: () => { state.offset = Math.max(0, state.offset - PAGE); reloadPage(load); } }, 'Previous'),
      h('span', { 'aria-live': 'polite', id: 'diff-range' }, page.matching === 0 ? '0 keys' : `${state.offset + 1}–${last} of ${page.matching} keys`),
      h('button', { type: 'button', disabled: last >= page.matching, onclick: () => { state.offset += PAGE; reloadPage(load); } }, 'Next'));
  }

  filter.addEventListener('submit', (event) => {
    event.preventDefault();
    state.projection = projection.value;
    state.key = key.value.trim();
    state.offset = 0;
    reloadPage(load);
  });
  await load();
}
