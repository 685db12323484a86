// One process of a replay, forked by the beside-live contender: `runReplay` with its default
// settings over the schema's paid orders, as `rastro replay` runs it. Reports over IPC when its
// first batch is done and, at the end, when it started and ended (epoch ms) and what it handled.
import { createEventStore, openDatabase, runReplay } from 'rastro';
import { DATABASE_URL } from '../shared/database.js';
import { commissions } from './workload.js';

const [schema, runId] = process.argv.slice(2);
const db = await openDatabase({ url: DATABASE_URL, poolSize: 10 });
try {
  const store = createEventStore(db, { schema });
  let told = false;
  const startedAt = Date.now();
  // No effect is applied: the policy suppresses notify-seller (a replay that rewrites state).
  const summary = await runReplay(commissions, {
    store, runId, policy: {},
    onProgress: () => {
      if (!told) process.send?.({ started: true });
      told = true;
    },
  });
  process.send?.({ done: { startedAt, endedAt: Date.now(), events: summary.counters.events ?? 0 } });
} finally {
  await db.close();
}
