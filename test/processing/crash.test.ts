import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAudit } from '../../packages/rastro/src/audit/run-audit.js';
import { commissionCents, commissionProcessor } from '../../packages/server/src/demo/commission.js';
import { sellerNotifierClient, startSellerNotifier, type SellerNotifier } from '../../packages/server/src/demo/seller-notifier.js';
import { migrate } from '../../packages/rastro/src/db/migrate.js';
import { effectLedger } from '../../packages/rastro/src/processing/effect-admin.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { DATABASE_URL, postgresBackend, schemaName } from '../support/databases.js';
import { commissions, makeOrders, payOrders } from '../support/orders.js';

const postgres = postgresBackend();
const TRIALS = Number(process.env.RASTRO_CRASH_TRIALS ?? 100);
const CHILD = join(import.meta.dirname, '../../packages/server/dist/demo/run-child.js');
const policy = { 'notify-seller': { mode: 'apply', onFailure: 'keep' }, 'notify-finance': { mode: 'apply', onFailure: 'release' } } as const;

let seller: SellerNotifier;
let finance: SellerNotifier;
beforeAll(async () => {
  seller = await startSellerNotifier({ deduplicates: false, delayMs: 1 });
  finance = await startSellerNotifier({ deduplicates: true, delayMs: 1 });
});
afterAll(async () => {
  await seller?.close();
  await finance?.close();
});

const count = (list: { idempotencyKey?: string }[], key: string) => list.filter((n) => n.idempotencyKey === key).length;

describe.skipIf(!postgres)('replay killed with SIGKILL on real PostgreSQL', () => {
  it(`never sends a non-deduplicated notification twice, sends every deduplicated one, and ends with a sequential run's state (${TRIALS} trials)`, async () => {
    const db = await postgres!.db();
    const orders = makeOrders(100);
    const killedAt: number[] = [];
    let midway = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const schema = schemaName();
      await migrate(db, { schema });
      const store = createEventStore(db, { schema });
      seller.sent.length = 0;
      finance.sent.length = 0;
      await payOrders(store, orders);

      const app = `rastro_crash_${schema}`;
      const child = spawn(process.execPath, [CHILD], {
        env: {
          ...process.env,
          MODE: 'replay', RUN_ID: 'crash', RASTRO_SCHEMA: schema, BATCH_SIZE: '5',
          RASTRO_DATABASE: `${DATABASE_URL}${DATABASE_URL!.includes('?') ? '&' : '?'}application_name=${app}`,
          SELLER_URL: seller.url, FINANCE_URL: finance.url,
        },
        stdio: 'ignore',
      });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      // Kill at a random moment once the run has started calling providers.
      for (let i = 0; i < 500 && finance.sent.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      const delay = Math.floor(Math.random() * 250);
      killedAt.push(delay);
      await new Promise((resolve) => setTimeout(resolve, delay));
      child.kill('SIGKILL');
      await exited;
      // The killed client's server processes end (and free its locks) once the server sees the socket close.
      for (let i = 0; i < 200; i++) {
        const { rows } = await db.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where application_name = $1', [app]);
        if (rows[0]!.n === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }

      const { rows: progress } = await db.query<{ status: string | null; done: number | null }>(
        `select (select status from "${schema}".processor_runs where run_id = 'crash') as status,
                (select value from "${schema}".run_counters where run_id = 'crash' and name = 'events') as done`,
      );
      if (progress[0]!.status === 'running' && Number(progress[0]!.done ?? 0) > 0) midway++;

      const processor = commissionProcessor(sellerNotifierClient(seller.url), { finance: sellerNotifierClient(finance.url) });
      await runReplay(processor, { store, runId: 'crash', policy });

      const states = new Map((await effectLedger(store).list({ limit: 10_000 })).map((effect) => [effect.key, effect.state]));
      for (const event of await store.readAll()) {
        const sellerKey = `${event.id}:notify-seller`;
        const sent = count(seller.sent, sellerKey);
        expect(sent, `trial ${trial}: ${sellerKey}`).toBeLessThanOrEqual(1);
        if (states.get(sellerKey) !== 'uncertain') {
          expect(states.get(sellerKey), `trial ${trial}`).toBe('done');
          expect(sent, `trial ${trial}: ${sellerKey} done but not sent`).toBe(1);
        }
        const financeKey = `${event.id}:notify-finance`;
        expect(count(finance.sent, financeKey), `trial ${trial}: ${financeKey}`).toBe(1);
        expect(states.get(financeKey)).toBe('done');
      }
      const expected = new Map(orders.map((o) => [o.orderId, { commissionCents: commissionCents(o.amountCents, o.percent), version: 1 }]));
      expect(await commissions(store)).toEqual(expected);
      // The audit agrees: nothing lost or doubled; left behind only the notifications the kill made uncertain.
      const audit = await runAudit(store, { full: true, record: false });
      expect(audit.findings.map((f) => `${f.check}/${f.kind}/${f.subject.id}`).sort(), `trial ${trial}`)
        .toEqual([...states].filter(([, state]) => state === 'uncertain').map(([key]) => `effects/uncertain/${key}`).sort());
      await db.query(`drop schema "${schema}" cascade`);
    }
    expect(killedAt).toHaveLength(TRIALS);
    // Most kills must land inside the run, or the test would prove little.
    console.log(`crash trials: ${TRIALS}, killed after some batches committed and before the end: ${midway}`);
    expect(midway).toBeGreaterThanOrEqual(TRIALS / 3);
  }, 900_000);
});
