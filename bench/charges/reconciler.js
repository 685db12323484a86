// A reconciler in a process of its own, as one `rastro serve` would run it: its own pool of 10 on
// `schema`, charges against the acquirer at `acquirerUrl`, and, when the parent says `reconcile`,
// `reconcileEffects(store, { types: charges.effectTypes, limit })` until nothing claimable is left.
// It answers with the report and the seconds the call took.
import { performance } from 'node:perf_hooks';
import { acquirerClient, createCharges, createEventStore, openDatabase, reconcileEffects } from 'rastro';
import { DATABASE_URL } from '../shared/database.js';
import { poolErrors } from '../shared/pools.js';
import { serveChild } from '../shared/server-child.js';

await serveChild(async ({ schema, acquirerUrl, limit }) => {
  const errors = poolErrors(`reconciler pool on ${schema}`);
  const db = await openDatabase({ url: DATABASE_URL, poolSize: 10, onError: errors.onError });
  const store = createEventStore(db, { schema });
  const charges = createCharges(store, { acquirer: acquirerClient(acquirerUrl) });
  return {
    info: { pid: process.pid },
    commands: {
      /** Opens the pool's connections before the clock runs, as a reconciler that has been up a while. */
      async warm() {
        await Promise.all(Array.from({ length: 10 }, () => db.query('select pg_sleep(0.02)')));
      },
      async reconcile() {
        const started = performance.now();
        const report = await reconcileEffects(store, { types: charges.effectTypes, limit });
        return { report, seconds: (performance.now() - started) / 1000 };
      },
    },
    async close() {
      errors.closing();
      await db.close();
    },
  };
});
