// rastro: the load rows against `startServer` (bench/http-api/rastro-server.js), the balance
// reads again on a server that remembers no account, then balance latency of one long account
// without and with its snapshot, each in a server of its own.
import { runContender } from '../shared/contender.js';
import { startServerChild } from '../shared/server-child.js';
import { runBalanceLoad, runLoad, sequentialBalance, WORKLOAD } from './workload.js';

const SERVER = new URL('./rastro-server.js', import.meta.url);

async function withServer(options, fn) {
  const server = await startServerChild(SERVER, options);
  try {
    return await fn(server);
  } finally {
    await server.close();
  }
}

const { events, snapshots, replay } = WORKLOAD.tail;
const expected = { version: events, balance: events - 1 };

/**
 * One account of `events` events read sequentially. Without snapshots every read replays the
 * stream. With its snapshot, reads are measured twice: right after the fill, before PostgreSQL
 * has statistics for the new table, then after ANALYZE, the state autovacuum brings it to.
 */
async function longAccount() {
  // Nothing remembered between requests: these rows measure the read from the snapshot, or of every event.
  const replayed = await withServer({ snapshotEvery: 0, accountCacheSize: 0, tailEvents: events }, async (server) => {
    await server.command('analyze');
    return sequentialBalance(server.info.url, server.info.accountId, replay, expected);
  });
  return withServer({ snapshotEvery: 100, accountCacheSize: 0, tailEvents: events, rebuildSnapshots: true }, async (server) => {
    if (server.info.snapshots?.written !== 1) throw new Error(`rebuildSnapshots wrote ${JSON.stringify(server.info.snapshots)}, expected one snapshot`);
    const fresh = await sequentialBalance(server.info.url, server.info.accountId, snapshots, expected);
    if (await server.command('analyzed')) console.error('http-api: autovacuum analyzed the new table before the "before ANALYZE" row was measured');
    await server.command('analyze');
    const analyzed = await sequentialBalance(server.info.url, server.info.accountId, snapshots, expected);
    return {
      tailP50Snapshots: analyzed.p50,
      tailP99Snapshots: analyzed.p99,
      tailP50SnapshotsFresh: fresh.p50,
      tailP99SnapshotsFresh: fresh.p99,
      tailP50Replay: replayed.p50,
      tailP99Replay: replayed.p99,
    };
  });
}

await runContender(async () => {
  const load = await withServer({ snapshotEvery: 100 }, (server) => runLoad(server.info.url));
  // The same balance reads on a server that remembers no account: each read folds 50 events. Its
  // table is new and small: analyzed first, as autovacuum would, so the planner reads it by key.
  const cold = await withServer({ snapshotEvery: 100, accountCacheSize: 0 }, (server) => runBalanceLoad(server.info.url, () => server.command('analyze')));
  return { ...load, coldBalances: cold.balances, coldBalanceP99: cold.balanceP99, ...(await longAccount()) };
});
