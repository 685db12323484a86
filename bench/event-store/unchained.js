// rastro with the trail's chain turned off, in its own schema: event_chain replaced by a function
// that links nothing, so its appends are rastro's same statement without the hashing. What the
// chain costs is rastro against this.
import { createEventStore, migrate, openDatabase } from 'rastro';
import { runContender } from '../shared/contender.js';
import { DATABASE_URL } from '../shared/database.js';
import { poolErrors } from '../shared/pools.js';
import { runEventStoreWorkload } from './workload.js';

async function openUnchained(run) {
  const schema = `bench_unchained_${run}`;
  const errors = poolErrors(`unchained pool for ${schema}`);
  const db = await openDatabase({ url: DATABASE_URL, poolSize: 10, onError: errors.onError });
  await db.query(`drop schema if exists ${schema} cascade`);
  await migrate(db, { schema });
  await db.query(`create or replace function ${schema}.event_chain(prev bytea, stream_id text, first_version bigint, ids uuid[], types text[], data jsonb[],
      metadata jsonb[], occurred_at timestamptz[], schema_versions smallint[], recorded_at timestamptz) returns bytea[]
    language sql immutable as $$ select array_fill(null::bytea, array[cardinality(ids)]) $$`);
  const store = createEventStore(db, { schema });
  return {
    append: (streamId, version, events) => store.append(streamId, events, { expectedVersion: version }),
    async readPage(after, limit) {
      const events = await store.readAll({ after: after ?? undefined, limit });
      return { count: events.length, after: events.at(-1) };
    },
    analyze: () => db.query(`analyze ${schema}.events; analyze ${schema}.streams`),
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

await runContender(async (run) => runEventStoreWorkload(await openUnchained(run)));
