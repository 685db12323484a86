// rastro's replay runner over the same 100,000 events: (b) every effect applied against an
// in-process provider, then (a) a second run finding every effect already recorded, then
// (c) a simulated run.
import { runReplay } from 'rastro';
import { runContender } from '../shared/contender.js';
import { PROCESSING, applyPolicy, commissions, openFilledStore } from './workload.js';

const processor = commissions;
const policy = applyPolicy;

async function timed(store, options) {
  const started = performance.now();
  const summary = await runReplay(processor, { store, policy, batchSize: PROCESSING.batchSize, ...options });
  const seconds = (performance.now() - started) / 1000;
  if (summary.counters.events !== PROCESSING.events) throw new Error(`replay handled ${summary.counters.events} events`);
  return { rate: PROCESSING.events / seconds, counters: summary.counters };
}

await runContender(async (run) => {
  const filled = await openFilledStore(`bench_proc_rastro_${run}`);
  try {
    const applied = await timed(filled.store, { runId: 'apply' });
    if (applied.counters.applied !== PROCESSING.events) throw new Error('not every effect was applied');
    // Setup, not measured: the ledger and the commission rows at rest, as a day after they were written.
    await filled.settle(['effects', 'projections']);
    const recorded = await timed(filled.store, { runId: 'recorded' });
    if (recorded.counters['already-recorded'] !== PROCESSING.events) throw new Error('not every effect was already recorded');
    const simulated = await timed(filled.store, { runId: 'simulate', simulate: true });
    return { replayRecorded: recorded.rate, replayApplied: applied.rate, simulate: simulated.rate };
  } finally {
    await filled.close();
  }
});
