// The server under test: rastro's own `startServer` from dist/, in a fresh schema that is
// dropped on close. With `tailEvents`, it first fills one account's stream through the store
// (batches of 1,000 deposits) and, with `rebuildSnapshots`, snapshots it at its last version.
// `accountCacheSize: 0` makes it remember no account between requests.
// The parent can ask it to `analyze` its tables, or whether they have been analyzed.
import { randomBytes } from 'node:crypto';
import { startServer } from 'rastro-server';
import { DATABASE_URL } from '../shared/database.js';
import { serveChild } from '../shared/server-child.js';

const FILL_BATCH = 1000;

async function fillAccount(server, events) {
  const { id } = await server.ledger.open('bench tail account');
  const streamId = `account-${id}`;
  let version = 1; // AccountOpened
  while (version < events) {
    const count = Math.min(FILL_BATCH, events - version);
    const batch = Array.from({ length: count }, () => ({ type: 'AccountDeposited', data: { amount: 1 } }));
    ({ streamVersion: version } = await server.store.append(streamId, batch, { expectedVersion: version }));
  }
  return id;
}

await serveChild(async ({ snapshotEvery = 100, accountCacheSize, tailEvents, rebuildSnapshots = false }) => {
  const schema = `bench_http_${randomBytes(4).toString('hex')}`;
  const server = await startServer({ port: 0, host: '127.0.0.1', databaseUrl: DATABASE_URL, schema, logLevel: 'silent', snapshotEvery, accountCacheSize });
  const close = async () => {
    try {
      await server.db.query(`drop schema ${schema} cascade`);
    } finally {
      await server.close();
    }
  };
  try {
    const info = { url: server.url, schema };
    if (tailEvents) {
      info.accountId = await fillAccount(server, tailEvents);
      if (rebuildSnapshots) info.snapshots = await server.ledger.rebuildSnapshots();
    }
    const commands = {
      // What autovacuum does within about a minute of the fill: planner statistics for the tables.
      async analyze() {
        for (const table of ['events', 'streams', 'snapshots']) await server.db.query(`analyze ${schema}.${table}`);
      },
      /** Whether the events table has planner statistics yet (autovacuum may have analyzed it). */
      async analyzed() {
        const { rows } = await server.db.query(`select reltuples >= 0 as analyzed from pg_class where oid = '${schema}.events'::regclass`);
        return rows[0].analyzed;
      },
    };
    return { info, commands, close };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
});
