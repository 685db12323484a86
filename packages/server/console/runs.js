// Replay runs: progress and counters while they go; start a simulate run, then the real one.
import { api } from './api.js';
import { confirmAction, h, seconds } from './dom.js';
import { isOutage, showOutage } from './freshness.js';
import { every, reloadPage } from './refresh.js';
import { badge } from './status.js';

// A replay's partitions, shared by the processes replaying it: how far each one's checkpoint got
// and which process holds it now.
function partitionsList(run) {
  const parts = run.partitions ?? [];
  if (parts.length <= 1 && !parts.some((p) => p.holder)) return null;
  const holders = new Set(parts.filter((p) => p.holder).map((p) => p.holder.pid));
  return h('details', { class: 'partitions' },
    h('summary', {}, `${parts.length} partitions · ${holders.size} ${holders.size === 1 ? 'process' : 'processes'}`),
    h('ul', {}, parts.map((p) => h('li', { 'data-partition': p.partition },
      `#${p.partition}: ${p.position === null ? 'not started' : `at position ${p.position}`} · `,
      p.holder ? `held by backend ${p.holder.pid}${p.holder.client ? ` (${p.holder.client})` : ''}${p.holder.runner ? `, runner ${p.holder.runner}` : ''}` : 'free'))));
}

function progressCell(run) {
  if (run.mode === 'live') return h('span', { class: 'muted' }, `live · ${run.lag.events} behind (${seconds(run.lag.seconds)})`);
  const percent = Math.round((run.progress ?? 0) * 100);
  return h('div', {},
    h('progress', { max: 100, value: percent, 'aria-label': `progress of ${run.runId}` }),
    h('span', { class: 'percent', 'data-percent': percent }, ` ${percent}%`),
    h('div', { class: 'muted' }, `${run.done} of ${run.total ?? '?'} events`),
    partitionsList(run));
}

// The status comes from the run's liveness: a run whose process was stopped or killed says so,
// with since when (for a dead one, its last sign of life).
function statusBadge(run) {
  const state = run.job?.state === 'failed' ? 'failed' : run.status;
  const since = run.since && (state === 'dead' || state === 'stopped') ? ` since ${new Date(run.since).toLocaleString()}` : '';
  return badge(state, since, run.job?.error ? ` — ${run.job.error}` : '');
}

function runsTable(runs) {
  if (runs.length === 0) return h('p', { class: 'empty' }, 'No runs yet.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Run', 'Processor', 'Kind', 'Status', 'Progress', 'Counters', ''].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, runs.map((run) => h('tr', { 'data-run': run.runId },
      h('td', {}, h('code', {}, run.runId)), h('td', {}, run.processor),
      h('td', {}, run.mode === 'live' ? 'live' : run.simulate ? 'simulate' : 'real replay'),
      h('td', {}, statusBadge(run)), h('td', {}, progressCell(run)),
      h('td', {}, h('pre', { class: 'counters' }, Object.entries(run.counters).map(([k, v]) => `${k} ${v}`).join('\n') || '—')),
      h('td', {}, run.simulate ? h('a', { href: `#/runs/${encodeURIComponent(run.runId)}/diff` }, 'Open diff') : null)))));
}

function startForm(processors, onStarted) {
  const field = (id, label, input) => h('div', {}, h('label', { for: id }, label), input);
  const processor = h('select', { id: 'replay-processor', name: 'processor', required: true }, processors.map((p) => h('option', { value: p.name }, p.name)));
  const runId = h('input', { id: 'replay-run-id', name: 'runId', placeholder: 'generated', pattern: '[A-Za-z0-9][A-Za-z0-9_.:\\-]{0,99}' });
  const from = h('input', { id: 'replay-from', name: 'from', type: 'datetime-local' });
  const to = h('input', { id: 'replay-to', name: 'to', type: 'datetime-local' });
  const maxRate = h('input', { id: 'replay-max-rate', name: 'maxRate', type: 'number', min: 1, step: 1, placeholder: 'no limit' });
  const yieldToLive = h('input', { id: 'replay-yield', name: 'yieldToLive', type: 'checkbox', checked: true });
  const simulate = h('input', { id: 'replay-simulate', name: 'simulate', type: 'checkbox', checked: true });
  const policy = h('textarea', { id: 'replay-policy', name: 'policy', rows: 2, cols: 36 }, '{}');
  const submit = h('button', { type: 'submit', class: 'primary', id: 'replay-start' }, 'Start simulate run');
  simulate.addEventListener('change', () => (submit.textContent = simulate.checked ? 'Start simulate run' : 'Start real run'));
  const form = h('form', { class: 'inline', 'aria-labelledby': 'start-title' },
    field('replay-processor', 'Processor', processor), field('replay-run-id', 'Run id (optional)', runId),
    field('replay-from', 'Events from (local time)', from), field('replay-to', 'Events before', to),
    field('replay-max-rate', 'Max events/s (spares live traffic)', maxRate),
    h('div', { class: 'check' }, yieldToLive, h('label', { for: 'replay-yield' }, 'Yield to live runners: read no batch ahead while they run')),
    h('div', { class: 'check' }, simulate, h('label', { for: 'replay-simulate' }, 'Simulate: record a diff, call nothing')),
    field('replay-policy', 'Effect policy (JSON)', policy), submit);
  // What happened shows in one place, under the form (and is read out: it is a live region).
  const say = (text, kind = 'muted') => Object.assign(document.getElementById('runs-result'), { className: kind, textContent: text });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    let parsedPolicy;
    try {
      parsedPolicy = JSON.parse(policy.value || '{}');
    } catch {
      say('The policy is not valid JSON.', 'error');
      policy.focus();
      return;
    }
    const body = { processor: processor.value, simulate: simulate.checked, policy: parsedPolicy };
    if (runId.value) body.runId = runId.value;
    if (from.value) body.from = new Date(from.value).toISOString();
    if (to.value) body.to = new Date(to.value).toISOString();
    if (maxRate.value) body.maxRate = Number(maxRate.value);
    if (!yieldToLive.checked) body.yieldToLive = false;
    const what = simulate.checked ? 'a simulate run (no state written, no effect called)' : 'a REAL replay: it writes state and calls providers by the policy';
    const over = from.value || to.value ? ` over ${from.value || 'the start'} → ${to.value || 'now'}` : ' over the whole log';
    // A real run writes state and calls providers: its dialog starts on Cancel.
    if (!(await confirmAction(simulate.checked ? 'Start simulate run' : 'Start real run', `Start ${what} of ${body.processor}${over}?`, 'Start', { destructive: !simulate.checked }))) return;
    submit.disabled = true;
    try {
      const started = await api('/ops/replays', { method: 'POST', body });
      say(`Started run ${started.runId}.`);
    } catch (err) {
      if (isOutage(err)) showOutage(err);
      const field = err.problem?.field ? ` (${err.problem.field})` : '';
      say(`Not started${field}: ${err.message}`, 'error');
    }
    submit.disabled = false;
    await reloadPage(onStarted);
  });
  return form;
}

export async function renderRuns(root) {
  const { processors } = await api('/ops/processors');
  const list = h('section', { 'aria-labelledby': 'runs-title' }, h('h2', { id: 'runs-title' }, 'Runs'));
  const reload = async () => {
    const { runs } = await api('/ops/runs');
    list.replaceChildren(list.firstChild, runsTable(runs));
    return runs;
  };
  const start = processors.length
    ? startForm(processors, reload)
    : h('p', { class: 'empty' }, 'This server has no processors loaded: start it with --processors <module> or a rastro.config.js to run replays.');
  root.append(h('h1', {}, 'Replay runs'), h('h2', { id: 'start-title' }, 'Start a replay'), start, h('p', { id: 'runs-result', class: 'muted', 'aria-live': 'polite' }), list);
  // Poll fast while a replay runs, slowly otherwise.
  let fast = false;
  let stop = () => {};
  const schedule = () => {
    stop();
    stop = every(fast ? 1000 : 5000, async () => {
      const runs = await reload();
      const running = runs.some((run) => run.mode === 'replay' && run.status === 'running' && run.job?.state !== 'failed');
      if (running !== fast) {
        fast = running;
        setTimeout(schedule);
      }
    });
  };
  schedule();
  return () => stop();
}
