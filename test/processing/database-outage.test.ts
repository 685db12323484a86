import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { isDatabaseUnavailable } from '../../packages/rastro/src/db/database-error.js';
import { DatabaseUnavailableError } from '../../packages/rastro/src/errors.js';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';
import { runRelay } from '../../packages/rastro/src/outbox/relay.js';
import { runLive } from '../../packages/rastro/src/processing/live-runner.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { partitionLockName } from '../../packages/rastro/src/processing/runners/partition-leases.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { proxiedDatabase, type ProxiedDatabase } from '../support/database-proxy.js';
import { eventually } from '../support/eventually.js';
import { checkDelivery } from '../support/outbox-writers.js';

const backend = postgresBackend();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

const tally = defineProcessor({
  name: 'tally',
  handlers: {
    tick: async (event, ctx) => {
      await ctx.upsert('tally', event.streamId, { n: event.data.n }, { version: event.streamVersion });
    },
  },
});

async function appendTicks(store: EventStore, from: number, count: number): Promise<void> {
  for (let n = from; n < from + count; n++) await store.append(`s${n % 7}`, [{ type: 'tick', data: { n } }]);
}

/** The store's streams whose tally is at their last version, and the run's `events` counter. */
async function tallied(store: EventStore): Promise<{ behind: number; events: number }> {
  const { rows } = await store.db.query<{ behind: number }>(
    `select count(*)::int as behind from "${store.schema}".streams s
      left join "${store.schema}".projections p on p.projection = 'tally' and p.key = s.stream_id
      where p.version is distinct from s.version`,
  );
  const { rows: counters } = await store.db.query<{ value: number }>(`select value from "${store.schema}".run_counters where run_id = 'live:tally' and name = 'events'`);
  return { behind: rows[0]!.behind, events: Number(counters[0]?.value ?? 0) };
}

/** Partition locks of a runner group held in the database now: a runner that lost its session holds none, whatever it believes. */
async function partitionLocksHeld(store: EventStore, group: string): Promise<number> {
  const { rows } = await store.db.query<{ n: number }>(
    `select count(*)::int as n from pg_locks l where l.locktype = 'advisory' and l.objsubid = 2 and l.granted and l.classid = hashtext($1)::oid`,
    [partitionLockName(store.schema, group)],
  );
  return rows[0]!.n;
}

async function setUp(): Promise<{ direct: EventStore; proxy: ProxiedDatabase; proxied: EventStore }> {
  const { db, schema } = await freshSchema(backend!);
  const proxy = await proxiedDatabase(DATABASE_URL!, `outage_${schema}`);
  cleanups.push(() => proxy.close());
  return { direct: createEventStore(db, { schema }), proxy, proxied: createEventStore(await proxy.open(), { schema }) };
}

describe.skipIf(!backend)('runners through a database outage', () => {
  it('a live processor backs off while the database is cut, then resumes from its checkpoints and takes its partitions again', async () => {
    const { direct, proxy, proxied } = await setUp();
    const errors: unknown[] = [];
    const runner = await runLive(tally, { store: proxied, policy: {}, pollIntervalMs: 50, onError: (err) => errors.push(err) });
    cleanups.push(() => runner.stop());
    await appendTicks(direct, 0, 20);
    await eventually(async () => (await tallied(direct)).events === 20, 'the first 20 events');

    await proxy.cut();
    await appendTicks(direct, 20, 20);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every(isDatabaseUnavailable)).toBe(true);
    expect((await tallied(direct)).events).toBe(20);

    await proxy.restore();
    await appendTicks(direct, 40, 20);
    await eventually(async () => (await tallied(direct)).events === 60, 'every event after the outage');
    expect(await tallied(direct)).toEqual({ behind: 0, events: 60 });
    await eventually(async () => runner.partitions.length === 8 && (await partitionLocksHeld(direct, 'tally')) === 8, 'its partitions again');
  });

  it('a live processor whose own session alone is ended renews it and goes on', async () => {
    const { direct, proxied } = await setUp();
    const runner = await runLive(tally, { store: proxied, policy: {}, pollIntervalMs: 50, onError: () => undefined });
    cleanups.push(() => runner.stop());
    await appendTicks(direct, 0, 10);
    await eventually(async () => (await tallied(direct)).events === 10, 'the first 10 events');
    // The backend holding this processor's partition locks is the runner's session.
    const { rows } = await direct.db.query<{ ended: boolean }>(
      `select pg_terminate_backend(pid) as ended from (select distinct l.pid from pg_locks l
        where l.locktype = 'advisory' and l.objsubid = 2 and l.classid = hashtext($1)::oid) s`,
      [partitionLockName(direct.schema, 'tally')],
    );
    expect(rows).toEqual([{ ended: true }]);
    await appendTicks(direct, 10, 10);
    await eventually(async () => (await tallied(direct)).events === 20, 'the events after its session ended');
    await eventually(async () => runner.partitions.length === 8 && (await partitionLocksHeld(direct, 'tally')) === 8, 'its partitions held again');
  });

  it('an event whose handler cannot reach a database is tried again after the outage, not parked', async () => {
    const { direct, proxied } = await setUp();
    let down = true;
    const errors: unknown[] = [];
    const lookup = defineProcessor({
      name: 'lookup',
      handlers: {
        tick: async (event, ctx) => {
          if (down) throw new DatabaseUnavailableError('connection refused', undefined);
          await ctx.upsert('looked-up', event.streamId, { n: event.data.n }, { version: event.streamVersion });
        },
      },
    });
    const runner = await runLive(lookup, { store: proxied, policy: {}, pollIntervalMs: 50, onError: (err) => errors.push(err) });
    cleanups.push(() => runner.stop());
    await appendTicks(direct, 0, 10);
    await eventually(() => errors.length >= 2, 'the runner meeting the outage');
    down = false;
    await eventually(async () => {
      const { rows } = await direct.db.query<{ n: number }>(`select count(*)::int as n from "${direct.schema}".projections where projection = 'looked-up'`);
      return rows[0]!.n === 7;
    }, 'every stream looked up');
    const { rows } = await direct.db.query<{ n: number }>(`select count(*)::int as n from "${direct.schema}".parked_events`);
    expect(rows[0]!.n).toBe(0);
    expect(errors.every(isDatabaseUnavailable)).toBe(true);
  });

  it('a relay publishes what was written before, during and after a cut, each aggregate in order', async () => {
    const { direct, proxy, proxied } = await setUp();
    const outbox = createOutbox(direct.db, { schema: direct.schema });
    const counts = new Map<string, number>();
    const write = async (count: number) => {
      for (let i = 0; i < count; i++) {
        const aggregate = `a${i % 5}`;
        const n = (counts.get(aggregate) ?? 0) + 1;
        counts.set(aggregate, n);
        await direct.db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId: aggregate, type: 'OrderChanged', payload: { aggregate, n } }));
      }
    };
    const publisher = createMemoryPublisher({ keep: 10_000 });
    const relay = await runRelay({ store: proxied, publisher, pollIntervalMs: 50, backoffMs: 100, maxBackoffMs: 500, onError: () => undefined });
    cleanups.push(() => relay.stop());
    const received = () => publisher.published.map((m) => ({ id: m.id, aggregate: (m.payload as { aggregate: string }).aggregate, n: (m.payload as { n: number }).n }));
    await write(30);
    await eventually(() => publisher.published.length >= 30, 'the messages written before the cut');
    await proxy.cut();
    await write(30);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await proxy.restore();
    await write(30);
    await eventually(() => new Set(publisher.published.map((m) => m.id)).size === 90, 'all 90 messages');
    const delivery = checkDelivery(received(), counts);
    expect(delivery.problems).toEqual([]);
    expect(delivery.unique).toBe(90);
    await eventually(async () => (await partitionLocksHeld(direct, 'relay:outbox')) === 8, 'the relay holding its partitions again');
  });
});
