import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commissionProcessor, NOTIFY_FINANCE, NOTIFY_SELLER } from '../../packages/server/src/demo/commission.js';
import { sellerNotifierClient, startSellerNotifier, type SellerNotifier } from '../../packages/server/src/demo/seller-notifier.js';
import { migrate } from '../../packages/rastro/src/db/migrate.js';
import { effectLedger } from '../../packages/rastro/src/processing/effect-admin.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { runDiff } from '../../packages/rastro/src/processing/run-diff.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { DATABASE_URL, postgresBackend, schemaName } from '../support/databases.js';
import { commissions, makeOrders, payOrders } from '../support/orders.js';

const postgres = postgresBackend();
const CHILD = join(import.meta.dirname, '../../packages/server/dist/demo/run-child.js');
const KILLS = Number(process.env.RASTRO_REPLAY_KILLS ?? 30);
const PROCESSES = 3;
const ORDERS = 400;
const policy = { [NOTIFY_SELLER]: { mode: 'apply', onFailure: 'keep' }, [NOTIFY_FINANCE]: { mode: 'apply', onFailure: 'release' } } as const;

let seller: SellerNotifier;
let finance: SellerNotifier;
beforeAll(async () => {
  seller = await startSellerNotifier({ deduplicates: false, delayMs: 5 });
  finance = await startSellerNotifier({ deduplicates: true, delayMs: 5 });
});
afterAll(async () => {
  await seller?.close();
  await finance?.close();
});

const count = (list: { idempotencyKey?: string }[], key: string) => list.filter((n) => n.idempotencyKey === key).length;

interface Child {
  process: ChildProcess;
  exited: Promise<number | null>;
  stderr: () => string;
}

function replayProcess(schema: string, runId: string, extra: Record<string, string> = {}): Child {
  const child = spawn(process.execPath, [CHILD], {
    env: {
      ...process.env, MODE: 'replay', RUN_ID: runId, RASTRO_SCHEMA: schema, RASTRO_DATABASE: DATABASE_URL!,
      // Paced, so the run outlasts its kills on a fast machine as on a slow one.
      SELLER_URL: seller.url, FINANCE_URL: finance.url, BATCH_SIZE: '5', MAX_RATE: '15', ...extra,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { process: child, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))), stderr: () => stderr };
}

/**
 * Runs `PROCESSES` processes of one run id, killing a random one with SIGKILL every so often and
 * starting another in its place, `kills` times; then lets the run end. Resolves with the kills made.
 */
async function replayUnderKills(schema: string, runId: string, kills: number, extra?: Record<string, string>): Promise<number> {
  const running: Child[] = Array.from({ length: PROCESSES }, () => replayProcess(schema, runId, extra));
  let killed = 0;
  while (killed < kills) {
    await new Promise((resolve) => setTimeout(resolve, 80 + Math.floor(Math.random() * 200)));
    const i = Math.floor(Math.random() * running.length);
    const victim = running[i]!;
    // A process that ended on its own ended the run: no more kills to make.
    if (victim.process.exitCode !== null) break;
    victim.process.kill('SIGKILL');
    await victim.exited;
    killed++;
    running[i] = replayProcess(schema, runId, extra);
  }
  for (const child of running) {
    const code = await child.exited;
    expect(code, child.stderr()).toBe(0);
  }
  return killed;
}

async function freshStore(): Promise<EventStore> {
  const db = await postgres!.db();
  const schema = schemaName();
  await migrate(db, { schema });
  return createEventStore(db, { schema });
}

describe.skipIf(!postgres)('a replay in 3 processes killed at random on real PostgreSQL', () => {
  it(`ends with the state, effects, counters and diff of one process replaying alone (${KILLS} SIGKILLs)`, async () => {
    const orders = makeOrders(ORDERS);
    const shared = await freshStore();
    const alone = await freshStore();
    await payOrders(shared, orders);
    await payOrders(alone, orders);

    seller.sent.length = 0;
    finance.sent.length = 0;
    const killed = await replayUnderKills(shared.schema, 'shared', KILLS);
    expect(killed).toBe(KILLS);
    const sharedSeller = [...seller.sent];
    const sharedFinance = [...finance.sent];

    seller.sent.length = 0;
    finance.sent.length = 0;
    const processor = commissionProcessor(sellerNotifierClient(seller.url), { finance: sellerNotifierClient(finance.url) });
    const single = await runReplay(processor, { store: alone, runId: 'shared', policy, batchSize: 5 });

    // The state is the same.
    expect(await commissions(shared)).toEqual(await commissions(alone));
    // Every event was counted once, whoever handled it and however often a process died.
    const summary = await runReplay(processor, { store: shared, runId: 'shared', policy });
    expect(summary.counters.events).toBe(single.counters.events);
    expect(summary.counters.events).toBe(ORDERS);
    expect(summary.counters.written).toBe(single.counters.written);

    // Each effect as often as its policy says: a notification that cannot be deduplicated at most
    // once (uncertain when a kill hid whether it went out), a deduplicated one exactly once.
    const states = new Map((await effectLedger(shared).list({ limit: 10_000 })).map((effect) => [effect.key, effect.state]));
    for (const event of await shared.readAll()) {
      const sellerKey = `${event.id}:${NOTIFY_SELLER}`;
      const sent = count(sharedSeller, sellerKey);
      expect(sent, sellerKey).toBeLessThanOrEqual(1);
      if (states.get(sellerKey) !== 'uncertain') {
        expect(states.get(sellerKey), sellerKey).toBe('done');
        expect(sent, `${sellerKey} done but not sent`).toBe(1);
      }
      const financeKey = `${event.id}:${NOTIFY_FINANCE}`;
      expect(new Set(sharedFinance.filter((n) => n.idempotencyKey === financeKey)).size, financeKey).toBe(1);
      expect(states.get(financeKey), financeKey).toBe('done');
    }
    expect(new Set(sharedFinance.map((n) => n.idempotencyKey)).size).toBe(ORDERS);

    // A simulated run with the bug (divisor 1000), shared and killed the same way, records the same diff.
    const simulatedKills = await replayUnderKills(shared.schema, 'simulate-bug', 10, { SIMULATE: '1', DIVISOR: '1000' });
    expect(simulatedKills).toBeGreaterThan(0);
    const buggy = commissionProcessor(sellerNotifierClient(seller.url), { divisor: 1000, finance: sellerNotifierClient(finance.url) });
    await runReplay(buggy, { store: alone, runId: 'simulate-bug', policy, simulate: true });
    const strip = (rows: Awaited<ReturnType<typeof runDiff>>) => rows.map(({ projection, key, before, after }) => ({ projection, key, before, after }));
    const diff = strip(await runDiff(shared, 'simulate-bug'));
    expect(diff).toHaveLength(ORDERS);
    expect(diff).toEqual(strip(await runDiff(alone, 'simulate-bug')));
    await shared.db.query(`drop schema "${shared.schema}" cascade`);
    await alone.db.query(`drop schema "${alone.schema}" cascade`);
  }, 240_000);
});
