import { describe, expect, it } from 'vitest';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { markAppendsNothing } from '../../packages/rastro/src/store/sql.js';
import { freshSchema, postgresBackend } from '../support/databases.js';
import { openTransaction } from '../support/open-transaction.js';

const postgres = postgresBackend();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Alone (vitest.config.ts): the figure reads every session of the cluster, and other suites'
// transactions would be counted in it.
describe.skipIf(!postgres)('the oldest open writing transaction on real PostgreSQL', () => {
  it('counts a transaction that may still append, and not one marked as appending nothing', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    // A processor's batch writing its rows: marked, holding a transaction id, open for a while.
    const marked = await openTransaction(db, async (tx) => {
      await tx.query(markAppendsNothing);
      await tx.query(`create table ${schema}.batch_rows (n int)`);
    });
    let writer: Awaited<ReturnType<typeof openTransaction>> | undefined;
    try {
      await sleep(1200);
      const besideMarked = await store.readerDelay();
      expect(besideMarked.heldBack).toBe(0);
      // None, or a transaction of the server's own (autovacuum's analyze) younger than the batch.
      expect(besideMarked.oldestWriterMs ?? 0).toBeLessThan(1000);

      writer = await openTransaction(db, (tx) => tx.query('select pg_current_xact_id()'));
      await sleep(1200);
      expect((await store.readerDelay()).oldestWriterMs).toBeGreaterThanOrEqual(1000);
    } finally {
      await writer?.close();
      await marked.close();
    }
  });
});
