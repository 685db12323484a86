import { afterAll, describe, expect, it } from 'vitest';
import type { Database } from '../../packages/rastro/src/db/database.js';
import { openDatabase } from '../../packages/rastro/src/db/open-database.js';
import { defineProcessor, type Processor } from '../../packages/rastro/src/processing/processor.js';
import { runReplay, type RunSummary } from '../../packages/rastro/src/processing/replay-runner.js';
import { runStatus } from '../../packages/rastro/src/processing/run-status.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

const postgres = postgresBackend();

// Each runner below has a pool of its own, as a process of its own would: its partitions are
// session locks on its own connection.
const pools: Database[] = [];
async function pool(): Promise<Database> {
  const db = await openDatabase({ url: DATABASE_URL!, poolSize: 4 });
  pools.push(db);
  return db;
}
afterAll(async () => {
  for (const db of pools) await db.close();
});

const STREAMS = 24;
const VERSIONS = 5;

/** STREAMS accounts with VERSIONS events each, appended round-robin so streams interleave in the log. */
async function fill(store: EventStore): Promise<void> {
  for (let version = 1; version <= VERSIONS; version++) {
    for (let stream = 0; stream < STREAMS; stream++) {
      await store.append(`acct-${stream}`, [{ type: 'deposited', data: { amount: version * 10 + stream } }], { expectedVersion: version - 1 });
    }
  }
}

interface Calls {
  /** Handler calls per stream, in the order they happened, across every runner. */
  byStream: Map<string, number[]>;
  byRunner: Map<string, number>;
}

/** A processor recording its calls; `gate(event)` may hold a handler back. */
function recording(calls: Calls, runner: string, gate?: (streamId: string, version: number) => Promise<void> | undefined): Processor {
  return defineProcessor({
    name: 'balances',
    handlers: {
      deposited: async (event, ctx) => {
        await gate?.(event.streamId, event.streamVersion);
        const list = calls.byStream.get(event.streamId) ?? [];
        list.push(event.streamVersion);
        calls.byStream.set(event.streamId, list);
        calls.byRunner.set(runner, (calls.byRunner.get(runner) ?? 0) + 1);
        await ctx.upsert('balance', event.streamId, { last: event.data.amount, version: event.streamVersion }, { version: event.streamVersion });
      },
    },
  });
}

const newCalls = (): Calls => ({ byStream: new Map(), byRunner: new Map() });

function expectEveryStreamInOrderOnce(calls: Calls): void {
  expect(calls.byStream.size).toBe(STREAMS);
  for (const versions of calls.byStream.values()) expect(versions).toEqual([1, 2, 3, 4, 5]);
}

async function balances(store: EventStore) {
  const { rows } = await store.db.query(`select key, doc, version from "${store.schema}".projections order by key`);
  return rows;
}

describe.skipIf(!postgres)('a replay shared by runners of one run id on real PostgreSQL', () => {
  it('shares the streams: each event handled once, in stream order, both runners report the same end', async () => {
    const { schema } = await freshSchema(postgres!);
    const stores = [createEventStore(await pool(), { schema }), createEventStore(await pool(), { schema })];
    await fill(stores[0]!);
    const calls = newCalls();
    // Slow enough handlers that the second runner starts while the first has most of the run left.
    const slow = () => new Promise<void>((resolve) => setTimeout(resolve, 50));
    const first = runReplay(recording(calls, 'a', slow), { store: stores[0]!, runId: 'day', policy: {}, batchSize: 4 });
    await eventually(() => (calls.byRunner.get('a') ?? 0) > 0, 'the first runner to start');
    const second = runReplay(recording(calls, 'b', slow), { store: stores[1]!, runId: 'day', policy: {}, batchSize: 4 });
    const [a, b] = await Promise.all([first, second]);

    expectEveryStreamInOrderOnce(calls);
    // The runner that joined took a share of the partitions.
    expect(calls.byRunner.get('b')).toBeGreaterThan(0);
    expect(a).toEqual(b);
    expect(a.counters).toMatchObject({ events: STREAMS * VERSIONS, written: STREAMS * VERSIONS });

    // The same as one runner alone.
    const { schema: alone } = await freshSchema(postgres!);
    const single = createEventStore(await pool(), { schema: alone });
    await fill(single);
    const summary = await runReplay(recording(newCalls(), 'alone'), { store: single, runId: 'day', policy: {}, batchSize: 4 });
    expect(summary.counters).toEqual(a.counters);
    expect(await balances(single)).toEqual(await balances(stores[0]!));
  });

  it('ends on every runner only when every partition handled the whole range, whoever holds it', async () => {
    const { schema } = await freshSchema(postgres!);
    const stores = [createEventStore(await pool(), { schema }), createEventStore(await pool(), { schema })];
    await fill(stores[0]!);
    const calls = newCalls();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let held = 0;
    // The second runner's handlers wait for the gate: its partitions are left while the first finishes its own.
    const waiting = () => {
      held++;
      return gate;
    };
    // The first runner is slow enough to still be going when it gives the second its share.
    const slow = () => new Promise<void>((resolve) => setTimeout(resolve, 100));
    const first = runReplay(recording(calls, 'a', slow), { store: stores[0]!, runId: 'day', policy: {}, batchSize: 4, partitions: 4 });
    await eventually(() => (calls.byRunner.get('a') ?? 0) > 0, 'the first runner to start');
    const second = runReplay(recording(calls, 'b', waiting), { store: stores[1]!, runId: 'day', policy: {}, batchSize: 4, partitions: 4 });
    let firstEnded: RunSummary | undefined;
    void first.then((summary) => (firstEnded = summary));
    await eventually(() => held > 0, 'the second runner to hold a partition');
    // The first handles its own partitions meanwhile; the second's are still left.
    const before = calls.byRunner.get('a')!;
    await eventually(async () => {
      const handled = calls.byRunner.get('a')!;
      await new Promise((resolve) => setTimeout(resolve, 1000));
      return handled > before && calls.byRunner.get('a') === handled;
    }, 'the first runner to finish its partitions', 30_000);
    expect(firstEnded).toBeUndefined();
    expect(calls.byRunner.get('a')).toBeLessThan(STREAMS * VERSIONS);
    // The run's status shows each partition's checkpoint and the process holding it: both runners.
    const status = await runStatus(stores[0]!).get('day');
    expect(status!.status).toBe('running');
    expect(status!.partitions).toHaveLength(4);
    expect(status!.partitions!.every((p) => p.holder !== null)).toBe(true);
    expect(new Set(status!.partitions!.map((p) => p.holder!.pid)).size).toBe(2);
    expect(status!.partitions!.some((p) => p.position !== null)).toBe(true);
    open();
    const [a, b] = await Promise.all([first, second]);
    expect(a).toEqual(b);
    expect(a.counters.events).toBe(STREAMS * VERSIONS);
    expectEveryStreamInOrderOnce(calls);
  });

  it('handles an event of the range committed after a runner found its partitions done, before the run ends', async () => {
    const { schema } = await freshSchema(postgres!);
    const stores = [createEventStore(await pool(), { schema }), createEventStore(await pool(), { schema })];
    await fill(stores[0]!);
    const calls = newCalls();
    const streamsOf = new Map<string, Set<string>>();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let held = 0;
    const track = (runner: string) => (streamId: string) => {
      const streams = streamsOf.get(runner) ?? new Set<string>();
      streams.add(streamId);
      streamsOf.set(runner, streams);
    };
    // The first runner is slow enough to still be going when it gives the second its share.
    const first = runReplay(recording(calls, 'a', (streamId) => {
      track('a')(streamId);
      return new Promise<void>((resolve) => setTimeout(resolve, 100));
    }), { store: stores[0]!, runId: 'late', policy: {}, batchSize: 4, partitions: 4 });
    await eventually(() => (calls.byRunner.get('a') ?? 0) > 0, 'the first runner to start');
    const second = runReplay(recording(calls, 'b', (streamId) => {
      track('b')(streamId);
      held++;
      return gate;
    }), { store: stores[1]!, runId: 'late', policy: {}, batchSize: 4, partitions: 4 });
    await eventually(() => held > 0, 'the second runner to hold a partition');
    // The first runner is done with its partitions and waits for the second's.
    await eventually(async () => {
      const handled = calls.byRunner.get('a') ?? 0;
      await new Promise((resolve) => setTimeout(resolve, 500));
      return handled > 0 && calls.byRunner.get('a') === handled;
    }, 'the first runner to finish its partitions', 30_000);
    // A stream of one of its partitions gets an event the whole-log range takes in.
    const stream = [...streamsOf.get('a')!].find((id) => !streamsOf.get('b')?.has(id))!;
    await stores[0]!.append(stream, [{ type: 'deposited', data: { amount: 1 } }], { expectedVersion: VERSIONS });
    await eventually(() => calls.byStream.get(stream)?.length === VERSIONS + 1, 'the late event to be handled', 10_000);
    open();
    const [a, b] = await Promise.all([first, second]);
    expect(a).toEqual(b);
    expect(a.counters.events).toBe(STREAMS * VERSIONS + 1);
    expect(calls.byStream.get(stream)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('commits nothing of a batch whose partition was taken over while it ran; the new holder handles it once', async () => {
    const { schema } = await freshSchema(postgres!);
    const stores = [createEventStore(await pool(), { schema }), createEventStore(await pool(), { schema })];
    await fill(stores[0]!);
    const calls = newCalls();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let entered = false;
    const stuck = () => {
      entered = true;
      return gate;
    };
    const first = runReplay(recording(calls, 'a', stuck), { store: stores[0]!, runId: 'day', policy: {}, batchSize: 200, partitions: 2 }).catch((err: unknown) => err);
    await eventually(() => entered, 'the first runner to be in a batch');
    // Its runner session ends (as when its connection is lost): its partitions are free at once.
    const { rows } = await stores[1]!.db.query<{ n: number }>(
      `select count(pg_terminate_backend(l.pid))::int as n from pg_locks l where l.locktype = 'advisory' and l.granted
         and l.classid = hashtext($1)::oid and l.objsubid = 2`,
      [`rastro.partition:${schema}:replay:day`],
    );
    expect(rows[0]!.n).toBeGreaterThan(0);
    const second = await runReplay(recording(calls, 'b'), { store: stores[1]!, runId: 'day', policy: {}, batchSize: 200, partitions: 2 });
    expect(second.counters.events).toBe(STREAMS * VERSIONS);
    // The first runner's batch, handled meanwhile by the second, must not commit when it goes on.
    open();
    const late = await first;
    const { rows: counted } = await stores[1]!.db.query<{ value: string }>(`select value from "${schema}".run_counters where run_id = 'day' and name = 'events'`);
    expect(Number(counted[0]!.value)).toBe(STREAMS * VERSIONS);
    if (!(late instanceof Error)) expect(late).toEqual(await runReplay(recording(newCalls(), 'c'), { store: stores[1]!, runId: 'day', policy: {} }));
  });

  it('paces a replay at maxRate events per second, and refuses a rate that is not a positive number', async () => {
    const { schema } = await freshSchema(postgres!);
    const store = createEventStore(await pool(), { schema });
    await fill(store);
    for (const maxRate of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(runReplay(recording(newCalls(), 'x'), { store, runId: 'paced', policy: {}, maxRate })).rejects.toMatchObject({ code: 'RASTRO_VALIDATION', field: 'maxRate' });
    }
    for (const batchSize of [0, 1.5, 10_001]) {
      await expect(runReplay(recording(newCalls(), 'x'), { store, runId: 'paced', policy: {}, batchSize })).rejects.toMatchObject({ code: 'RASTRO_VALIDATION', field: 'batchSize' });
    }
    // Nothing was started by the refused calls.
    expect((await store.db.query(`select 1 from "${schema}".processor_runs`)).rows).toHaveLength(0);
    const started = performance.now();
    const summary = await runReplay(recording(newCalls(), 'x'), { store, runId: 'paced', policy: {}, batchSize: 10, maxRate: 200 });
    expect(summary.counters.events).toBe(STREAMS * VERSIONS);
    // 120 events at 200 per second: the last batch may end early, every other one waits its turn.
    expect(performance.now() - started).toBeGreaterThanOrEqual(((STREAMS * VERSIONS - 10) / 200) * 1000);
  });
});
