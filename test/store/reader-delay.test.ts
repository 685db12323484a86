import { describe, expect, it } from 'vitest';
import type { Database, Transaction } from '../../src/db/database.js';
import { createEventStore } from '../../src/store/event-store.js';
import { markAppendsNothing } from '../../src/store/sql.js';
import { freshSchema, postgresBackend } from '../support/databases.js';

const postgres = postgresBackend();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A transaction that runs `begin` and stays open until the returned function is called. */
async function openTransaction(db: Database, begin: (tx: Transaction) => Promise<unknown>): Promise<() => Promise<void>> {
  let close!: () => void;
  const closing = new Promise<void>((resolve) => (close = resolve));
  let opened!: () => void;
  const begun = new Promise<void>((resolve) => (opened = resolve));
  const done = db.transaction(async (tx) => {
    await begin(tx);
    opened();
    await closing;
  });
  await Promise.race([begun, done]);
  return async () => {
    close();
    await done;
  };
}

// Alone (vitest.config.ts): the figure reads every session of the cluster, and other suites'
// transactions would be counted in it.
describe.skipIf(!postgres)('the oldest open writing transaction on real PostgreSQL', () => {
  it('counts a transaction that may still append, and not one marked as appending nothing', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    // A processor's batch writing its rows: marked, holding a transaction id, open for a while.
    const closeMarked = await openTransaction(db, async (tx) => {
      await tx.query(markAppendsNothing);
      await tx.query(`create table ${schema}.batch_rows (n int)`);
    });
    let closeWriter: (() => Promise<void>) | undefined;
    try {
      await sleep(1200);
      const besideMarked = await store.readerDelay();
      expect(besideMarked.heldBack).toBe(0);
      // None, or a transaction of the server's own (autovacuum's analyze) younger than the batch.
      expect(besideMarked.oldestWriterMs ?? 0).toBeLessThan(1000);

      closeWriter = await openTransaction(db, (tx) => tx.query('select pg_current_xact_id()'));
      await sleep(1200);
      expect((await store.readerDelay()).oldestWriterMs).toBeGreaterThanOrEqual(1000);
    } finally {
      await closeWriter?.();
      await closeMarked();
    }
  });
});
