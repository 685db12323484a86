// Emmett's PostgreSQL event store. It has no schema option (its tables live in `public`), so each
// run gets a database of its own. Its dumbo pool replaces pg's type parsers process-wide, which is
// why every contender runs in its own process.
//
// The bench owns the one pg.Pool Emmett works through and hands it to dumbo, so that it can
// listen for the pool's errors and see its connections closed before the database is dropped.
// Left to dumbo, the pool comes from dumbo's connection-string cache (`getPool`): no 'error'
// listener, and `store.close()` ends it with `pool.end()`, which resolves before the connections'
// sockets have closed; the `drop database ... with (force)` that followed then terminated them,
// and their FATAL error, re-emitted on the pool, killed the process. Reaching that cached pool
// through `getPool` would count one more user of it, and `store.close()` would no longer end it.
// The migration's nested pool and the reads (`readMessagesBatch(pool.execute)`) use this same
// pool; `analyze` and the drop use short-lived clients of their own.
import { dumbo } from '@event-driven-io/dumbo';
import { getPostgreSQLEventStore, readMessagesBatch } from '@event-driven-io/emmett-postgresql';
import pg from 'pg';
import { runContender } from '../shared/contender.js';
import { databaseUrl, dropDatabase, withClient } from '../shared/database.js';
import { guardPool } from '../shared/pools.js';
import { runEventStoreWorkload } from './workload.js';

async function openEmmett(run) {
  const database = `bench_emmett_${run}`;
  // A database left over by an interrupted run: no connection of this process is in it.
  await withClient((client) => client.query(`drop database if exists ${database} with (force)`).then(() => client.query(`create database ${database}`)));
  const connectionString = databaseUrl(database);
  // What dumbo's getPool would create: pg's defaults, 10 connections.
  const guarded = guardPool(new pg.Pool({ connectionString, max: 10 }), `emmett pool on ${database}`);
  const pool = dumbo({ connectionString, pool: guarded.pool });
  const store = getPostgreSQLEventStore(connectionString, { connectionOptions: { dumbo: pool } });

  const close = async () => {
    try {
      await store.close();
    } finally {
      await guarded.end();
    }
  };
  try {
    await store.schema.migrate();
  } catch (err) {
    await close().catch(() => undefined);
    await dropDatabase(database, 'emmett').catch(() => undefined);
    throw err;
  }

  return {
    // A new stream (version 0) takes Emmett's insert path; otherwise the exact expected version.
    append: (streamId, version, events) => store.appendToStream(streamId, events, { expectedStreamVersion: BigInt(version) }),
    // The read Emmett's consumers use: global order, after a global position.
    async readPage(after, limit) {
      const { messages, currentGlobalPosition } = await readMessagesBatch(pool.execute, { after: after ?? 0n, batchSize: limit });
      return { count: messages.length, after: currentGlobalPosition };
    },
    analyze: () => withClient((client) => client.query('analyze emt_messages; analyze emt_streams'), connectionString),
    async close() {
      try {
        await close();
      } finally {
        await dropDatabase(database, 'emmett');
      }
    },
  };
}

await runContender(async (run) => runEventStoreWorkload(await openEmmett(run)));
