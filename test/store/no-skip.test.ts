import { describe, expect, it } from 'vitest';
import { ConcurrencyError, TransactionIdsRewoundError } from '../../packages/rastro/src/errors.js';
import type { RecordedEvent } from '../../packages/rastro/src/store/event.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { APPENDS_NOTHING_LOCK_CLASS, markAppendsNothing } from '../../packages/rastro/src/store/sql.js';
import { freshSchema, postgresBackend } from '../support/databases.js';
import { deferred, openTransaction } from '../support/open-transaction.js';

const postgres = postgresBackend();

describe.skipIf(!postgres)('reading past open transactions on real PostgreSQL', () => {
  it('holds back events committed after an older transaction that is still open, then delivers them', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    await store.append('before', [{ type: 'n', data: {} }]);

    const release = deferred();
    const opened = deferred();
    const longWriter = db.transaction(async (tx) => {
      await store.append('slow', [{ type: 'n', data: { slow: true } }], { tx });
      opened.resolve();
      await release.promise;
    });
    await opened.promise;
    await store.append('fast', [{ type: 'n', data: { fast: true } }]);

    const visible = await store.readAll();
    expect(visible.map((event) => event.streamId)).toEqual(['before']);
    const delay = await store.readerDelay();
    expect(delay.heldBack).toBe(1);
    expect(delay.oldestWriterMs).toBeGreaterThanOrEqual(0);

    release.resolve();
    await longWriter;
    const after = await store.readAll({ after: visible[0] });
    expect(after.map((event) => event.streamId).sort()).toEqual(['fast', 'slow']);
    expect((await store.readerDelay()).heldBack).toBe(0);
  });

  it('keeps a stream’s versions in order when a transaction that started writing first appends to it last', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    await store.append('shared', [{ type: 'n', data: { v: 1 } }]);
    const release = deferred();
    const opened = deferred();
    // Takes its transaction id first (by writing elsewhere), then appends to `shared` after B.
    const early = db.transaction(async (tx) => {
      await store.append('other', [{ type: 'n', data: {} }], { tx });
      opened.resolve();
      await release.promise;
      await store.append('shared', [{ type: 'n', data: { v: 3 } }], { tx });
    });
    await opened.promise;
    await store.append('shared', [{ type: 'n', data: { v: 2 } }]);
    release.resolve();
    await early;
    const order = (await store.readAll()).filter((event) => event.streamId === 'shared').map((event) => event.streamVersion);
    expect(order).toEqual([1, 2, 3]);
  });

  it('reads past a transaction marked as appending nothing, and never past an older one that may append', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    await store.append('before', [{ type: 'n', data: {} }]);
    // A processor's batch: marked, then writing rows of its own, open while events are appended.
    const marked = await openTransaction(db, async (tx) => {
      await tx.query(markAppendsNothing);
      await tx.query(`create table ${schema}.batch_rows (n int)`);
    });
    try {
      await store.append('past-marked', [{ type: 'n', data: {} }]);
      expect((await store.readAll()).map((event) => event.streamId)).toEqual(['before', 'past-marked']);
      expect((await store.readerDelay()).heldBack).toBe(0);

      // An unmarked transaction that took its id, and so may still append below later events.
      const writer = await openTransaction(db, (tx) => tx.query('select pg_current_xact_id()'));
      let visible: RecordedEvent[] = [];
      try {
        await store.append('after-writer', [{ type: 'n', data: {} }]);
        visible = await store.readAll();
        expect(visible.map((event) => event.streamId)).toEqual(['before', 'past-marked']);
        expect((await store.readerDelay()).heldBack).toBe(1);
      } finally {
        await writer.close((tx) => store.append('late', [{ type: 'n', data: {} }], { tx }));
      }
      // The late event sorts before the one committed first: nothing was read past it.
      expect((await store.readAll({ after: visible[1] })).map((event) => event.streamId)).toEqual(['late', 'after-writer']);
    } finally {
      await marked.close();
    }
  });

  it('holds readers back for a transaction that holds the mark of another transaction’s id', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    const impostor = await openTransaction(db, async (tx) => {
      const { rows } = await tx.query<{ id: string }>('select pg_current_xact_id()::text as id');
      await tx.query('select pg_advisory_xact_lock($1, (($2::bigint + 1) & 2147483647)::int)', [APPENDS_NOTHING_LOCK_CLASS, rows[0]!.id]);
    });
    try {
      await store.append('held', [{ type: 'n', data: {} }]);
      expect(await store.readAll()).toEqual([]);
    } finally {
      await impostor.close();
    }
    expect((await store.readAll()).map((event) => event.streamId)).toEqual(['held']);
  });

  it('lets exactly one of 20 concurrent appends with the same expected version win', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    await store.append('s', [{ type: 'n', data: {} }]);
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => store.append('s', [{ type: 'n', data: { i } }], { expectedVersion: 1 })),
    );
    const won = results.filter((result) => result.status === 'fulfilled');
    const lost = results.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(19);
    for (const result of lost) expect(result.reason).toBeInstanceOf(ConcurrencyError);
    expect(lost.every((result) => (result.reason as ConcurrencyError).actual === 2)).toBe(true);
    expect(await store.streamVersion('s')).toBe(2);
  });

  it('refuses to run on a log restored from another cluster until it is rebased, and then skips nothing', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    await store.assertTransactionIdsCurrent();
    // A restored row: its transaction order comes from a cluster far ahead of this one.
    await db.query(
      `insert into "${schema}".events (tx_order, stream_id, stream_version, id, type, data, occurred_at)
       values (pg_current_xact_id()::text::bigint + 1000000000, 'restored', 1, gen_random_uuid(), 'n', '{}', now())`,
    );
    await db.query(`insert into "${schema}".streams values ('restored', 1, 0)`);
    await expect(store.assertTransactionIdsCurrent()).rejects.toBeInstanceOf(TransactionIdsRewoundError);
    const [restored] = await store.readAll();
    expect(restored).toBeUndefined(); // held back: never skipped, only delayed

    await store.rebaseTransactionOrder();
    await store.assertTransactionIdsCurrent();
    const [first] = await store.readAll();
    expect(first!.streamId).toBe('restored');
    await store.append('new', [{ type: 'n', data: {} }]);
    const next = await store.readAll({ after: first });
    expect(next.map((event) => event.streamId)).toEqual(['new']);
  });

  it('sees a restore in the outbox too: an outbox row from another cluster is refused, then rebased past', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    await db.query(
      `insert into "${schema}".outbox (tx_order, id, aggregate_type, aggregate_id, type, payload)
       values (pg_current_xact_id()::text::bigint + 1000000000, gen_random_uuid(), 'order', 'restored', 'T', '{}')`,
    );
    await expect(store.assertTransactionIdsCurrent()).rejects.toBeInstanceOf(TransactionIdsRewoundError);
    await store.rebaseTransactionOrder();
    await store.assertTransactionIdsCurrent();
  });
});
