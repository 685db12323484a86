// rastro through its public API, built into dist/, as the event-store workload drives a store.
import { createEventStore, migrate, openDatabase } from 'rastro';
import { DATABASE_URL } from '../shared/database.js';
import { poolErrors } from '../shared/pools.js';

/**
 * rastro in a fresh schema `bench_<name>_<run>`, as the workload drives a store; `prepare` may
 * change the schema after its migration (the unchained contender replaces its chain).
 */
export async function openRastro(run, name = 'rastro', prepare = async () => undefined) {
  const schema = `bench_${name}_${run}`;
  const errors = poolErrors(`${name} pool for ${schema}`);
  const db = await openDatabase({ url: DATABASE_URL, poolSize: 10, onError: errors.onError });
  await db.query(`drop schema if exists ${schema} cascade`);
  await migrate(db, { schema });
  await prepare(db, schema);
  const store = createEventStore(db, { schema });

  return {
    // 0 is rastro's 'no-stream'; any other number is the exact expected version.
    append: (streamId, version, events) => store.append(streamId, events, { expectedVersion: version }),
    async readPage(after, limit) {
      const events = await store.readAll({ after: after ?? undefined, limit });
      return { count: events.length, after: events.at(-1) };
    },
    analyze: () => db.query(`analyze ${schema}.events; analyze ${schema}.streams`),
    // Waits (up to a minute) until no transaction in the cluster holds readAll back.
    async settle() {
      for (let waited = 0; (await store.readerDelay()).heldBack > 0 && waited < 60_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
    },
    async close() {
      try {
        await db.query(`drop schema ${schema} cascade`);
      } finally {
        errors.closing();
        await db.close();
      }
    },
  };
}
