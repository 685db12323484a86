import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { MIGRATIONS_DIR, migrate } from '../../packages/rastro/src/db/migrate.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { inLogOrder } from '../../packages/rastro/src/processing/read-batch.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, freshSchema, schemaName } from '../support/databases.js';
import { makeOrders, payOrders } from '../support/orders.js';

const apply = { 'notify-seller': { mode: 'apply', onFailure: 'keep' } } as const;

const notifier = defineProcessor({
  name: 'ledger-read',
  handlers: {
    'order.paid': async (event, ctx) => {
      await ctx.upsert('paid', String(event.data.orderId), { orderId: event.data.orderId }, { version: event.streamVersion });
      await ctx.effect('notify-seller', async (key) => ({ delivered: key }));
    },
  },
});

/** What a simulate run over the whole log counts: every effect a run has performed is found in the ledger as it reads. */
async function simulated(store: EventStore): Promise<Record<string, number>> {
  return (await runReplay(notifier, { store, policy: apply, simulate: true, batchSize: 10 })).counters;
}

describe('a decoded batch', () => {
  it('is put in log order when the aggregate returned it out of order, and left as it is otherwise', () => {
    const ordered = [{ txOrder: 7, position: 3 }, { txOrder: 7, position: 9 }, { txOrder: 8, position: 1 }, { txOrder: 12, position: 2 }];
    const read = [...ordered];
    expect(inLogOrder(read)).toBe(read);
    expect(inLogOrder([ordered[2]!, ordered[0]!, ordered[3]!, ordered[1]!])).toEqual(ordered);
  });
});

describe.each(backends())('a batch reads its ledger entries on $name', (backend) => {
  it('by position when its events are close together', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    await payOrders(store, makeOrders(25));
    expect((await runReplay(notifier, { store, runId: 'apply', policy: apply, batchSize: 10 })).counters).toMatchObject({ applied: 25 });
    const { rows } = await db.query<{ recorded: number }>(
      `select count(*)::int as recorded from "${schema}".effects f join "${schema}".events e on e.id = f.event_id and e.position = f.event_position`,
    );
    expect(rows[0]!.recorded).toBe(25);
    expect(await simulated(store)).toEqual({ events: 25, 'already-recorded': 25 });
  });

  it('by position also for an entry inserted without one, as a runner of an earlier version writes it', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    await payOrders(store, makeOrders(25));
    await db.query(
      `insert into "${schema}".effects (key, event_id, effect_type, state, run_id, on_failure, owner_token, result)
       select id || ':notify-seller', id, 'notify-seller', 'done', 'earlier', 'keep', 0, 'null' from "${schema}".events`,
    );
    expect(await simulated(store)).toEqual({ events: 25, 'already-recorded': 25 });
  });

  it('by event id when its events are spread among many others', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    // Ten events of another type between two paid orders: a batch of 10 spans 100 positions.
    for (const order of makeOrders(25)) {
      await store.append(`cart-${order.orderId}`, Array.from({ length: 10 }, () => ({ type: 'cart.viewed', data: {} })));
      await payOrders(store, [order]);
    }
    expect((await runReplay(notifier, { store, runId: 'apply', policy: apply, batchSize: 10 })).counters).toMatchObject({ applied: 25 });
    // Entries without a position (as a runner of an earlier version writes them) are found by id.
    await db.query(`update "${schema}".effects set event_position = null`);
    expect(await simulated(store)).toEqual({ events: 25, 'already-recorded': 25 });
  });

  it('recorded before the ledger kept positions: the migration gives them theirs', async () => {
    const db = await backend.db();
    const schema = schemaName();
    const directory = await mkdtemp(join(tmpdir(), 'rastro-migrations-'));
    onTestFinished(async () => {
      await db.query(`drop schema if exists "${schema}" cascade`);
      await rm(directory, { recursive: true, force: true });
    });
    await cp(MIGRATIONS_DIR, directory, { recursive: true, filter: (source) => !source.endsWith('0016_effects_event_position.sql') });
    await migrate(db, { schema, directory });
    const store = createEventStore(db, { schema });
    await payOrders(store, makeOrders(12));
    await db.query(
      `insert into "${schema}".effects (key, event_id, effect_type, state, run_id, on_failure, owner_token, result)
       select id || ':notify-seller', id, 'notify-seller', 'done', 'before', 'keep', 0, 'null' from "${schema}".events`,
    );
    await migrate(db, { schema });
    const { rows } = await db.query<{ missing: number }>(
      `select count(*)::int as missing from "${schema}".effects f join "${schema}".events e on e.id = f.event_id where f.event_position is distinct from e.position`,
    );
    expect(rows[0]!.missing).toBe(0);
    expect(await simulated(store)).toEqual({ events: 12, 'already-recorded': 12 });
  });
});
