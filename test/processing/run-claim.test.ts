import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commissionProcessor } from '../../src/demo/commission.js';
import { sellerNotifierClient, startSellerNotifier, type SellerNotifier } from '../../src/demo/seller-notifier.js';
import { RunInProgressError } from '../../src/errors.js';
import { defineProcessor } from '../../src/processing/processor.js';
import { runReplay } from '../../src/processing/replay-runner.js';
import { createEventStore, type EventStore } from '../../src/store/event-store.js';
import { backends, DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { commissions, makeOrders, payOrders } from '../support/orders.js';

const CHILD = join(import.meta.dirname, '../../dist/demo/run-child.js');

/** A processor whose handlers wait for `open()`: a replay of it stays running until then. */
function gatedProcessor() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let entered = 0;
  const processor = defineProcessor({
    name: 'gated',
    handlers: {
      'order.paid': async (event, ctx) => {
        entered++;
        await gate;
        await ctx.upsert('gated', event.streamId, { ok: true }, { version: event.streamVersion });
      },
    },
  });
  return { processor, open, entered: () => entered };
}

async function progressOf(store: EventStore, runId: string) {
  const { rows } = await store.db.query(
    `select (select json_agg(c order by c.name) from "${store.schema}".run_counters c where c.run_id = $1) as counters,
            (select json_agg(p order by p.partition) from "${store.schema}".processor_checkpoints p where p.run_id = $1) as checkpoints`,
    [runId],
  );
  return rows[0];
}

describe.each(backends())('one replay per run id on $name', (backend) => {
  it('refuses a second replay of a running run id, changing nothing, and lets it continue once the first ended', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    await payOrders(store, makeOrders(30));
    const { processor, open, entered } = gatedProcessor();
    const first = runReplay(processor, { store, runId: 'day', policy: {}, batchSize: 10 });
    await eventually(() => entered() > 0, 'the first replay to start handling');
    const before = await progressOf(store, 'day');

    const second = await runReplay(processor, { store, runId: 'day', policy: {} }).catch((err: unknown) => err);
    expect(second).toBeInstanceOf(RunInProgressError);
    expect((second as RunInProgressError).code).toBe('RASTRO_RUN_IN_PROGRESS');
    expect((second as RunInProgressError).runId).toBe('day');
    expect(await progressOf(store, 'day')).toEqual(before);

    // Another run id is another run: it goes on beside the first.
    const other = runReplay(processor, { store, runId: 'other', policy: {} });
    open();
    expect((await first).counters).toMatchObject({ events: 30, written: 30 });
    expect((await other).counters.events).toBe(30);
    // The run ended: the same run id may be started again, and finds nothing left to do.
    expect((await runReplay(processor, { store, runId: 'day', policy: {} })).counters.events).toBe(30);
  });
});

const postgres = postgresBackend();

describe.skipIf(!postgres)('one replay per run id across processes on real PostgreSQL', () => {
  let seller: SellerNotifier;
  beforeAll(async () => {
    seller = await startSellerNotifier({ deduplicates: false, delayMs: 20 });
  });
  afterAll(() => seller?.close());

  function replayProcess(schema: string) {
    const child = spawn(process.execPath, [CHILD], {
      env: { ...process.env, MODE: 'replay', RUN_ID: 'shared', RASTRO_SCHEMA: schema, RASTRO_DATABASE: DATABASE_URL!, SELLER_URL: seller.url, BATCH_SIZE: '5' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    return { child, exited, stderr: () => stderr };
  }

  it('refuses a second process on a running run id; once the first is killed, the run continues at once and sends nothing twice', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    const orders = makeOrders(60);
    await payOrders(store, orders);
    seller.sent.length = 0;

    const first = replayProcess(schema);
    await eventually(() => seller.sent.length > 5, 'the first process to send notifications');
    const second = replayProcess(schema);
    expect(await second.exited).toBe(1);
    expect(second.stderr()).toContain('RASTRO_RUN_IN_PROGRESS');

    first.child.kill('SIGKILL');
    await first.exited;
    // The claim is a session lock: it ends with the killed process's connection, no lease to wait out.
    const third = replayProcess(schema);
    expect(await third.exited).toBe(0);

    const processor = commissionProcessor(sellerNotifierClient(seller.url));
    const summary = await runReplay(processor, { store, runId: 'shared', policy: { 'notify-seller': { mode: 'apply', onFailure: 'keep' } } });
    expect(summary.total).toBe(60);
    expect((await commissions(store)).size).toBe(60);
    const keys = seller.sent.map((n) => n.idempotencyKey);
    expect(new Set(keys).size).toBe(keys.length);
  }, 120_000);
});
