import { describe, expect, it } from 'vitest';
import { commissionProcessor } from '../../packages/server/src/demo/commission.js';
import { sellerNotifierClient } from '../../packages/server/src/demo/seller-notifier.js';
import { effectLedger } from '../../packages/rastro/src/processing/effect-admin.js';
import { runLive } from '../../packages/rastro/src/processing/live-runner.js';
import { parkedEvents } from '../../packages/rastro/src/processing/parking.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { RUNNER_LOCK_CLASS } from '../../packages/rastro/src/processing/sql.js';
import { markAppendsNothing } from '../../packages/rastro/src/store/sql.js';
import { eventsChannel } from '../../packages/rastro/src/store/subscribe.js';
import { backends, postgresBackend } from '../support/databases.js';
import { notifierForFile } from '../support/notifier.js';
import { commissions, makeOrders, payOrders } from '../support/orders.js';

const keep = { 'notify-seller': { mode: 'apply', onFailure: 'keep' } } as const;
const release = { 'notify-seller': { mode: 'apply', onFailure: 'release' } } as const;

const files = notifierForFile();
const storeOn = files.storeOn;

async function until(condition: () => Promise<boolean> | boolean, what: string, ms = 20_000): Promise<void> {
  const start = Date.now();
  while (!(await condition())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each(backends())('live runs on $name', (backend) => {
  it('handles events as they are appended, state and effects once, and resumes from its checkpoint', async () => {
    const store = await storeOn(backend);
    const processor = commissionProcessor(sellerNotifierClient(files.notifier().url));
    await payOrders(store, makeOrders(5, 'a'));
    const runner = await runLive(processor, { store, policy: keep, pollIntervalMs: 50 });
    await until(() => files.notifier().sent.length === 5, 'the first five notifications');
    await payOrders(store, makeOrders(5, 'b'));
    await until(() => files.notifier().sent.length === 10, 'five more');
    await runner.stop();
    expect((await commissions(store)).size).toBe(10);

    await payOrders(store, makeOrders(3, 'c'));
    const again = await runLive(processor, { store, policy: keep, pollIntervalMs: 50 });
    await until(() => files.notifier().sent.length === 13, 'the events appended while stopped');
    await again.stop();
    expect(new Set(files.notifier().sent.map((n) => n.orderId)).size).toBe(13);
  });

  it('parks a failing event, holds its stream’s later events behind it, and lets other streams go on', async () => {
    const store = await storeOn(backend);
    let failFor = 'bad';
    const handled: string[] = [];
    const processor = defineProcessor({
      name: 'picky',
      handlers: {
        'order.paid': async (event, ctx) => {
          if (event.data.orderId === failFor) throw new Error('cannot handle this order');
          handled.push(`${event.data.orderId}@${event.streamVersion}`);
          await ctx.upsert('seen', event.streamId, { v: event.streamVersion }, { version: event.streamVersion });
        },
      },
    });
    await store.append('order-bad', [{ type: 'order.paid', data: { orderId: 'bad' } }]);
    await store.append('order-bad', [{ type: 'order.paid', data: { orderId: 'bad-later' } }]);
    await store.append('order-good', [{ type: 'order.paid', data: { orderId: 'good' } }]);
    const runner = await runLive(processor, { store, policy: {}, pollIntervalMs: 50 });
    await until(() => handled.includes('good@1'), 'the healthy stream');
    await runner.stop();
    expect(handled).toEqual(['good@1']);
    const parked = parkedEvents(store);
    const list = await parked.list();
    expect(list.map((p) => [p.streamId, p.reason])).toEqual([
      ['order-bad', 'failed'],
      ['order-bad', 'waiting'],
    ]);
    expect(list[0]!.error).toContain('cannot handle this order');

    failFor = 'nothing';
    expect(await parked.retry(processor, list[0]!.eventId)).toEqual({ handled: 2, stillParked: 0, alreadyDone: [] });
    expect(handled).toEqual(['good@1', 'bad@1', 'bad-later@2']);
    expect(await parked.list()).toEqual([]);
  });

  it('skips a parked event on request and handles the rest of its stream', async () => {
    const store = await storeOn(backend);
    const handled: string[] = [];
    const processor = defineProcessor({
      name: 'skipper',
      handlers: {
        'order.paid': async (event) => {
          if (event.data.orderId === 'poison') throw new Error('poison');
          handled.push(event.data.orderId as string);
        },
      },
    });
    await store.append('s', [{ type: 'order.paid', data: { orderId: 'poison' } }, { type: 'order.paid', data: { orderId: 'after' } }]);
    await runReplay(processor, { store, runId: 'skip-run', policy: {} });
    const parked = parkedEvents(store);
    const [poison] = await parked.list({ runId: 'skip-run' });
    expect(await parked.skip(processor, poison!.eventId)).toEqual({ handled: 1, stillParked: 0, alreadyDone: [] });
    expect(handled).toEqual(['after']);
  });

  it('refuses to start with another partition count than the live run was started with, before taking any', async () => {
    const store = await storeOn(backend);
    const processor = commissionProcessor(sellerNotifierClient(files.notifier().url));
    const first = await runLive(processor, { store, policy: keep, pollIntervalMs: 50, partitions: 4 });
    await first.stop();
    await expect(runLive(processor, { store, policy: keep, partitions: 8 })).rejects.toMatchObject({ code: 'RASTRO_VALIDATION', field: 'partitions' });
    const again = await runLive(processor, { store, policy: keep, pollIntervalMs: 50, partitions: 4 });
    expect(again.partitions).toHaveLength(4);
    await again.stop();
  });

  it('runs custom SQL from ctx.tx in the batch transaction', async () => {
    const store = await storeOn(backend);
    await store.db.query(`create table "${store.schema}".audit (event_id uuid primary key, note text)`);
    const processor = defineProcessor({
      name: 'auditor',
      handlers: {
        'order.paid': async (event, ctx) => {
          const { rowCount } = await ctx.tx.query(`insert into "${store.schema}".audit values ($1, $2)`, [event.id, event.data.orderId]);
          expect(rowCount).toBe(1);
        },
      },
    });
    await payOrders(store, makeOrders(4));
    const summary = await runReplay(processor, { store, policy: {} });
    expect(summary.counters.events).toBe(4);
    const { rows } = await store.db.query<{ n: number }>(`select count(*)::int as n from "${store.schema}".audit`);
    expect(rows[0]!.n).toBe(4);
  });

  it('reserves an effect once when a live run and a replay race on the same events', async () => {
    const store = await storeOn(backend);
    await payOrders(store, makeOrders(40));
    const processor = commissionProcessor(sellerNotifierClient(files.notifier().url));
    const runner = await runLive(processor, { store, policy: keep, pollIntervalMs: 20, batchSize: 5 });
    await runReplay(processor, { store, runId: 'racer', policy: keep, batchSize: 5 });
    await until(async () => (await effectLedger(store).list({ state: 'done' })).length === 40, 'every effect done');
    await runner.stop();
    expect(files.notifier().sent).toHaveLength(40);
    expect(new Set(files.notifier().sent.map((n) => n.idempotencyKey)).size).toBe(40);
  });
});

const postgres = postgresBackend();

describe.skipIf(!postgres)('live runners sharing work on real PostgreSQL', () => {
  it('spreads partitions over three runners and processes every event once, each stream in order', async () => {
    const store = await storeOn(postgres!);
    const seen = new Map<string, number[]>();
    let calls = 0;
    const processor = defineProcessor({
      name: 'shared',
      handlers: {
        'order.paid': async (event) => {
          calls++;
          const versions = seen.get(event.streamId) ?? [];
          versions.push(event.streamVersion);
          seen.set(event.streamId, versions);
        },
      },
    });
    const runners = await Promise.all([1, 2, 3].map(() => runLive(processor, { store, policy: {}, partitions: 12, pollIntervalMs: 50, batchSize: 50 })));
    await until(() => runners.every((runner) => runner.partitions.length === 4), 'an even share of partitions', 15_000);
    for (let round = 0; round < 5; round++) {
      await Promise.all(Array.from({ length: 40 }, (_, s) => store.append(`stream-${s}`, [{ type: 'order.paid', data: { round } }])));
    }
    await until(() => calls >= 200, 'all 200 events');
    await new Promise((resolve) => setTimeout(resolve, 300));
    await Promise.all(runners.map((runner) => runner.stop()));
    expect(calls).toBe(200);
    for (const versions of seen.values()) expect(versions).toEqual([1, 2, 3, 4, 5]);
    expect(new Set(runners.flatMap((runner) => runner.partitions)).size).toBe(0);
  });

  it('reads an event held back by an open transaction as soon as that ends, not at the next poll', async () => {
    const store = await storeOn(postgres!);
    const handled: number[] = [];
    const processor = defineProcessor({ name: 'held', handlers: { 'order.paid': async () => void handled.push(Date.now()) } });
    const runner = await runLive(processor, { store, policy: {}, pollIntervalMs: 10_000 });
    const open = await store.db.connect();
    try {
      await until(() => runner.partitions.length > 0, 'the runner holding its partitions');
      // A transaction with an id older than the event's: the no-skip frontier holds the event back.
      await open.query('begin');
      await open.query('select pg_current_xact_id()');
      await store.append('held-1', [{ type: 'order.paid', data: {} }]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(handled).toEqual([]);
      await open.query('commit');
      const ended = Date.now();
      // Nothing else is appended, and the poll is 10 s away: the runner tries again on its own.
      await until(() => handled.length === 1, 'the held-back event', 5_000);
      expect(handled[0]! - ended).toBeLessThan(1_000);
    } finally {
      await open.query('rollback').catch(() => undefined);
      await open.release();
      await runner.stop();
    }
  });

  it('reads again after a batch: an event committed while it ran is handled without its notification', async () => {
    const store = await storeOn(postgres!);
    const s = `"${store.schema}"`;
    // An append written by SQL, as another writer might: nothing notifies the runner of it.
    const appendQuietly = (streamId: string) =>
      store.db.query(`with s as (insert into ${s}.streams (stream_id, version, tx_order) values ($1, 1, pg_current_xact_id()::text::bigint) returning tx_order)
        insert into ${s}.events (tx_order, stream_id, stream_version, id, type, data, occurred_at)
        select tx_order, $1, 1, gen_random_uuid(), 'order.paid', '{}', now() from s`, [streamId]);
    const handled: string[] = [];
    const processor = defineProcessor({
      name: 'drains',
      handlers: {
        'order.paid': async (event) => {
          handled.push(event.streamId);
          if (event.streamId === 'first') await appendQuietly('second');
        },
      },
    });
    const runner = await runLive(processor, { store, policy: {}, pollIntervalMs: 10_000 });
    try {
      await until(() => runner.partitions.length > 0, 'the runner holding its partitions');
      // Its first read done, the runner waits: one notification, for the first event only, wakes
      // it, and the next poll is 10 s away.
      await new Promise((resolve) => setTimeout(resolve, 500));
      await appendQuietly('first');
      await store.db.query('select pg_notify($1, $2)', [eventsChannel(store.schema), '']);
      await until(() => handled.length === 2, 'the event committed while the first batch ran', 5_000);
      expect(handled).toEqual(['first', 'second']);
    } finally {
      await runner.stop();
    }
  });

  it('reads events a replay batch held back as that batch commits, not at the next retry', async () => {
    const store = await storeOn(postgres!);
    const handled: number[] = [];
    const live = defineProcessor({ name: 'beside', handlers: { 'order.placed': async () => void handled.push(Date.now()) } });
    let inside: () => void = () => undefined;
    let gate: Promise<void> = Promise.resolve();
    const slow = defineProcessor({
      name: 'slow-replay',
      handlers: {
        // The batch's transaction takes its id here and stays open until the test lets it go.
        'order.paid': async (_event, ctx) => {
          await ctx.tx.query('select pg_current_xact_id()');
          inside();
          await gate;
        },
      },
    });
    const runner = await runLive(live, { store, policy: {}, pollIntervalMs: 10_000 });
    const delays: number[] = [];
    try {
      await until(() => runner.partitions.length > 0, 'the runner holding its partitions');
      for (let trial = 0; trial < 3; trial++) {
        const { positions } = await store.append(`paid-${trial}`, [{ type: 'order.paid', data: {} }]);
        let open!: () => void;
        gate = new Promise((resolve) => (open = resolve));
        const entered = new Promise<void>((resolve) => (inside = resolve));
        const replay = runReplay(slow, { store, runId: `slow-${trial}`, policy: {}, fromPosition: positions[0] });
        await entered;
        await store.append(`placed-${trial}`, [{ type: 'order.placed', data: {} }]);
        // The runner's retries of held-back work back off to one every 100 ms, the last one
        // about 326 ms after it first found the event held: release halfway to the next.
        await new Promise((resolve) => setTimeout(resolve, 378));
        expect(handled).toHaveLength(trial);
        const released = Date.now();
        open();
        await replay;
        await until(() => handled.length === trial + 1, 'the held-back event', 5_000);
        delays.push(handled[trial]! - released);
      }
    } finally {
      await runner.stop();
    }
    // Without the batch's notice, each waits about 50 ms for the next retry.
    expect(delays.sort((a, b) => a - b)[1]).toBeLessThan(30);
  });

  it('handles new events while a replay’s batch transaction is still writing its rows', async () => {
    const store = await storeOn(postgres!);
    const handled: string[] = [];
    const live = defineProcessor({ name: 'beside-rows', handlers: { 'order.placed': async (event) => void handled.push(event.streamId) } });
    const rows = defineProcessor({
      name: 'rows-replay',
      handlers: { 'order.paid': (event, ctx) => ctx.upsert('paid', event.streamId, { run: ctx.runId }, { version: event.streamVersion }).then(() => undefined) },
    });
    await store.append('paid-1', [{ type: 'order.paid', data: {} }]);
    await store.append('paid-2', [{ type: 'order.paid', data: {} }]);
    await runReplay(rows, { store, runId: 'rows-first', policy: {} });
    const runner = await runLive(live, { store, policy: {}, pollIntervalMs: 10_000 });
    // Another writer holds the second row the replay writes again: the replay's batch transaction
    // waits on it, its id taken by the first. The writer appends nothing and says so, or it would
    // hold readers back itself.
    const locker = await store.db.connect();
    let replay: Promise<unknown> | undefined;
    try {
      await until(() => runner.partitions.length > 0, 'the runner holding its partitions');
      await locker.query('begin');
      await locker.query(markAppendsNothing);
      await locker.query(`select 1 from "${store.schema}".projections where projection = 'paid' and key = 'paid-2' for update`);
      replay = runReplay(rows, { store, runId: 'rows-again', policy: {} });
      const waiting = async () =>
        (await store.db.query(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and backend_xid is not null and query like '%projections%'`)).rows.length > 0;
      await until(waiting, 'the replay’s batch waiting on the row');
      await store.append('placed-1', [{ type: 'order.placed', data: {} }]);
      await until(() => handled.length === 1, 'the live run handling the event while the batch is open', 3_000);
      expect(await waiting()).toBe(true);
    } finally {
      await locker.query('rollback').catch(() => undefined);
      await locker.release();
      await replay;
      await runner.stop();
    }
  });

  it('takes over a release reservation at once when its owner is dead, and sweeps a keep one to uncertain', async () => {
    const store = await storeOn(postgres!);
    await payOrders(store, makeOrders(2));
    const [first, second] = await store.readAll();
    // A runner that reserved both effects and died: its token's lock is not held by anyone.
    await store.db.query(
      `insert into "${store.schema}".effects (key, event_id, effect_type, state, run_id, on_failure, owner_token)
       values ($1, $2, 'notify-seller', 'reserved', 'dead', 'release', 12345), ($3, $4, 'notify-seller', 'reserved', 'dead', 'keep', 12345)`,
      [`${first!.id}:notify-seller`, first!.id, `${second!.id}:notify-seller`, second!.id],
    );
    const processor = commissionProcessor(sellerNotifierClient(files.notifier().url));
    const summary = await runReplay(processor, { store, runId: 'takeover', policy: { 'notify-seller': { mode: 'apply', onFailure: 'release' } } });
    expect(summary.counters).toMatchObject({ applied: 1, 'already-recorded': 1 });
    const effects = await effectLedger(store).list();
    expect(effects.map((e) => [e.key.startsWith(first!.id), e.state]).sort()).toEqual([
      [false, 'uncertain'],
      [true, 'done'],
    ]);
  });

  it('leaves a reservation a live owner holds alone, without waiting on the owner’s transaction', async () => {
    const store = await storeOn(postgres!);
    await payOrders(store, makeOrders(1));
    const [event] = await store.readAll();
    const key = `${event!.id}:notify-seller`;
    // A live runner: it holds its token's lock, has reserved the effect, and is in the
    // transaction that records its outcome (the row is locked until that commits).
    const owner = await store.db.connect();
    try {
      await owner.query(`select pg_advisory_lock(${RUNNER_LOCK_CLASS}, 4242)`);
      await owner.query(
        `insert into "${store.schema}".effects (key, event_id, effect_type, state, run_id, on_failure, owner_token)
         values ($1, $2, 'notify-seller', 'reserved', 'live:commissions', 'keep', 4242)`,
        [key, event!.id],
      );
      await owner.query('begin');
      await owner.query(`select 1 from "${store.schema}".effects where key = $1 for update`, [key]);

      const ownerPid = (await owner.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;

      const processor = commissionProcessor(sellerNotifierClient(files.notifier().url));
      let settled = false;
      const replay = runReplay(processor, { store, runId: 'beside-owner', policy: keep }).finally(() => (settled = true));
      // Whether any statement ever waits on the owner's transaction, however slow the machine.
      const waited = (async () => {
        while (!settled) {
          const { rows } = await store.db.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where $1 = any(pg_blocking_pids(pid))', [ownerPid]);
          if (rows[0]!.n > 0) return 'waited' as const;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        return 'never waited' as const;
      })();
      const summary = await Promise.race([replay, waited]);
      expect(summary).not.toBe('waited');
      expect(summary).toMatchObject({ counters: { 'already-recorded': 1 } });
      expect(files.notifier().sent).toHaveLength(0);
    } finally {
      await owner.query('rollback').catch(() => undefined);
      await owner.release();
    }
  });
});
