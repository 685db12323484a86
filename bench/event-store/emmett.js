// Emmett's PostgreSQL event store. It has no schema option (its tables live in `public`), so each
// run gets a database of its own. Its dumbo pool replaces pg's type parsers process-wide, which is
// why every contender runs in its own process.
import { dumbo } from '@event-driven-io/dumbo';
import { getPostgreSQLEventStore, readMessagesBatch } from '@event-driven-io/emmett-postgresql';
import { runContender } from '../shared/contender.js';
import { databaseUrl, withClient } from '../shared/database.js';
import { runEventStoreWorkload } from './workload.js';

async function openEmmett(run) {
  const database = `bench_emmett_${run}`;
  await withClient((client) => client.query(`drop database if exists ${database} with (force)`).then(() => client.query(`create database ${database}`)));
  const connectionString = databaseUrl(database);
  const pool = dumbo({ connectionString });
  const store = getPostgreSQLEventStore(connectionString, { connectionOptions: { dumbo: pool } });
  await store.schema.migrate();

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
      await store.close();
      await withClient((client) => client.query(`drop database ${database} with (force)`));
    },
  };
}

await runContender(async (run) => runEventStoreWorkload(await openEmmett(run)));
