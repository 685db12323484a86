import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Database } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { openDatabase } from '../db/open-database.js';
import { effectLedger } from '../processing/effect-admin.js';
import { runLive, type LiveRunner } from '../processing/live-runner.js';
import { addReports, reconcileEffects, type ReconcileReport } from '../processing/ledger/reconciler.js';
import { runReplay } from '../processing/replay-runner.js';
import { runDiff, type DiffRow } from '../processing/run-diff.js';
import { createEventStore, type EventStore } from '../store/event-store.js';
import { commissionCents, commissionProcessor, NOTIFY_SELLER, ORDER_PAID } from './commission.js';
import { sellerNotifierClient, startSellerNotifier } from './seller-notifier.js';

export interface StoryOptions {
  /** A postgres:// URL or a PGlite folder (not memory://: a second process opens it). */
  url: string;
  schema: string;
  orders?: number;
  log?: (line: string) => void;
  /**
   * The seller's provider can be asked what happened to a key: uncertain notifications are
   * settled by reconciliation instead of a person's review.
   */
  askProvider?: boolean;
}

export interface StoryReport {
  orders: number;
  sentBeforeKill: number;
  simulated: { counters: Record<string, number>; diff: DiffRow[] };
  replayed: Record<string, number>;
  /** Uncertain effects found for review, and how each was resolved. */
  reviewed: { key: string; resolvedAs: 'done' | 'retry' }[];
  /** With `askProvider`: what reconciliation found. */
  reconciled: ReconcileReport | undefined;
  /** Notifications the seller received per effect key. */
  sentPerKey: Map<string, number>;
  commissions: Map<string, { commissionCents: number; version: number }>;
  /** The expected commission per order: the fixed formula on its latest version. */
  expected: Map<string, { commissionCents: number; version: number }>;
  uncertainLeft: number;
  eventIds: string[];
}

const DAY_FROM = new Date('2026-10-14T00:00:00Z');
const DAY_TO = new Date('2026-10-15T00:00:00Z');
const policy = { [NOTIFY_SELLER]: { mode: 'apply', onFailure: 'keep' } } as const;
/** The live consumer's script, compiled: from src/ (tests) it is the one in dist/. */
function childScript(): string {
  const beside = fileURLToPath(new URL('./run-child.js', import.meta.url));
  return existsSync(beside) ? beside : fileURLToPath(new URL('../../dist/demo/run-child.js', import.meta.url));
}

async function until(condition: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const start = Date.now();
  while (!(await condition()) && Date.now() - start < ms) await new Promise((resolve) => setTimeout(resolve, 20));
}

async function commissionRows(store: EventStore) {
  const { rows } = await store.db.query<{ key: string; doc: { commissionCents: number }; version: number }>(
    `select key, doc, version from "${store.schema}".projections where projection = 'commission'`,
  );
  return new Map(rows.map((row) => [row.key, { commissionCents: row.doc.commissionCents, version: Number(row.version) }]));
}

/**
 * The seed's story, end to end: a day of `order.paid` events handled live by the buggy commission
 * (÷1,000); that process killed with SIGKILL midway; a simulated replay of the day with the fix;
 * then the real replay while the live consumer, fixed too, receives version-2 events of some of
 * the same orders; last, the review of uncertain notifications.
 */
export async function runCommissionStory(options: StoryOptions): Promise<StoryReport> {
  const log = options.log ?? (() => undefined);
  const count = options.orders ?? 40;
  const seller = await startSellerNotifier({ deduplicates: false, delayMs: 5 });
  const embedded = !/^postgres(ql)?:\/\//.test(options.url);
  let db: Database = await openDatabase({ url: options.url });
  let live: LiveRunner | undefined;
  try {
    await migrate(db, { schema: options.schema });
    let store = createEventStore(db, { schema: options.schema });
    const orders = Array.from({ length: count }, (_, i) => ({ orderId: `order-${i + 1}`, amountCents: 10_000 + 1_250 * i, percent: 5 + (i % 4) }));
    for (const [i, order] of orders.entries()) {
      await store.append(`order-${order.orderId}`, [{ type: ORDER_PAID, data: order, occurredAt: new Date(DAY_FROM.getTime() + (8 * 60 + i * 10) * 60_000) }]);
    }
    log(`1. ${count} orders paid on 2026-10-14 (version 1 of each order)`);

    // 2. The buggy live consumer, in its own process, killed midway.
    if (embedded) await db.close();
    const child = spawn(process.execPath, [childScript()], {
      env: { ...process.env, MODE: 'live', RASTRO_DATABASE: options.url, RASTRO_SCHEMA: options.schema, SELLER_URL: seller.url, DIVISOR: '1000', BATCH_SIZE: '4' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    let exitCode: number | null | undefined;
    const exited = new Promise((resolve) => child.once('exit', (code) => resolve((exitCode = code))));
    await until(() => seller.sent.length >= count / 2 || exitCode !== undefined, 60_000);
    if (exitCode !== undefined) throw new Error(`the live consumer process exited by itself (${exitCode}): ${stderr.slice(0, 500)}`);
    child.kill('SIGKILL');
    await exited;
    const sentBeforeKill = seller.sent.length;
    log(`2. live consumer (commission ÷1,000) killed with SIGKILL after ${sentBeforeKill} of ${count} notifications`);
    if (embedded) db = await openDatabase({ url: options.url });
    store = createEventStore(db, { schema: options.schema });
    const effects = effectLedger(store);
    const swept = await effects.sweep();
    log(`   sweep: ${swept.uncertain} reservation(s) of the dead process moved to uncertain (the call may have happened)`);

    // 3. Simulate the fix over the day.
    // With a provider that can be asked, a notification still on its way after 1.5 s is impossible: the client gives up after 1 s.
    const fixed = commissionProcessor(sellerNotifierClient(seller.url, { timeoutMs: 1_000 }), { askProvider: options.askProvider, settleMs: 1_500 });
    const simulation = await runReplay(fixed, { store, runId: 'fix-2026-10-14-simulate', from: DAY_FROM, to: DAY_TO, policy, simulate: true });
    const diff = await runDiff(store, 'fix-2026-10-14-simulate');
    log(`3. simulate: ${diff.length} commission(s) would change; notifications: ${simulation.counters['would-apply'] ?? 0} would be sent, ${simulation.counters['already-recorded'] ?? 0} already recorded`);

    // 4. The real replay, beside the fixed live consumer receiving version-2 events.
    seller.behaviour.failNext = { when: 'after-send', count: 1 };
    const revised = orders.filter((_, i) => i % 8 === 3).map((order) => ({ ...order, amountCents: order.amountCents + 5_000 }));
    const replaying = runReplay(fixed, { store, runId: 'fix-2026-10-14', from: DAY_FROM, to: DAY_TO, policy, batchSize: 8 });
    live = await runLive(fixed, { store, policy, pollIntervalMs: 50, batchSize: 10 });
    const [replay] = await Promise.all([
      replaying,
      (async () => {
        for (const order of revised) {
          await store.append(`order-${order.orderId}`, [{ type: ORDER_PAID, data: order, occurredAt: new Date('2026-10-15T09:00:00Z') }], { expectedVersion: 1 });
        }
      })(),
    ]);
    await until(async () => {
      const rows = await commissionRows(store);
      return revised.every((order) => rows.get(order.orderId)?.version === 2);
    }, 30_000);
    await live.stop();
    log(`4. replay fix-2026-10-14: ${replay.counters.written ?? 0} written, ${replay.counters['ignored-newer-version'] ?? 0} left to a newer version, ${replay.counters.applied ?? 0} notification(s) sent, ${replay.counters['already-recorded'] ?? 0} already recorded, ${replay.counters.uncertain ?? 0} uncertain`);
    log(`   live consumer meanwhile: ${live.counters.get('events')} event(s) (the rest of the day and ${revised.length} version-2 events), ${live.counters.get('applied')} notification(s) sent`);

    const reviewed: StoryReport['reviewed'] = [];
    let reconciled: ReconcileReport | undefined;
    if (options.askProvider) {
      // 5. Reconciliation: the provider is asked about each uncertain key, once a call can no
      // longer be on its way; those it never received are released and sent by a replay.
      const uncertainBefore = (await effects.list({ state: 'uncertain' })).length;
      const start = Date.now();
      for (;;) {
        const report = await reconcileEffects(store, { types: fixed.effects! });
        reconciled = reconciled ? addReports(reconciled, report) : report;
        if ((await effects.list({ state: 'uncertain' })).length === 0 || Date.now() - start > 30_000) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      if (reconciled!.released > 0) await runReplay(fixed, { store, runId: 'fix-2026-10-14-after-reconcile', from: DAY_FROM, to: DAY_TO, policy });
      log(`5. reconciliation: ${uncertainBefore} uncertain notification(s) asked of the provider: ${reconciled!.happened} had been sent (done), ${reconciled!.released} had not (released, then sent by a replay); no one reviewed anything`);
    } else {
      // 5. Review: the seller's log tells which uncertain notifications went out.
      for (const effect of await effects.list({ state: 'uncertain' })) {
        const sent = seller.sent.some((notification) => notification.idempotencyKey === effect.key);
        await effects.resolve(effect.key, sent ? 'done' : 'retry');
        reviewed.push({ key: effect.key, resolvedAs: sent ? 'done' : 'retry' });
      }
      if (reviewed.some((r) => r.resolvedAs === 'retry')) await runReplay(fixed, { store, runId: 'fix-2026-10-14-after-review', from: DAY_FROM, to: DAY_TO, policy });
      log(`5. review: ${reviewed.length} uncertain notification(s) resolved (${reviewed.filter((r) => r.resolvedAs === 'done').length} confirmed sent, ${reviewed.filter((r) => r.resolvedAs === 'retry').length} released and sent)`);
    }

    const sentPerKey = new Map<string, number>();
    for (const notification of seller.sent) sentPerKey.set(notification.idempotencyKey!, (sentPerKey.get(notification.idempotencyKey!) ?? 0) + 1);
    const expected = new Map(orders.map((order) => [order.orderId, { commissionCents: commissionCents(order.amountCents, order.percent), version: 1 }]));
    for (const order of revised) expected.set(order.orderId, { commissionCents: commissionCents(order.amountCents, order.percent), version: 2 });
    const commissions = await commissionRows(store);
    const eventIds = (await store.readAll({ limit: 10_000 })).map((event) => event.id);
    const duplicates = [...sentPerKey.values()].filter((n) => n > 1).length;
    const wrong = [...expected].filter(([id, value]) => commissions.get(id)?.commissionCents !== value.commissionCents || commissions.get(id)?.version !== value.version).length;
    log(`6. result: ${commissions.size - wrong} of ${count} commissions correct, ${duplicates} notification(s) sent twice, ${eventIds.filter((id) => !sentPerKey.has(`${id}:${NOTIFY_SELLER}`)).length} event(s) never notified`);
    return {
      orders: count,
      sentBeforeKill,
      simulated: { counters: simulation.counters, diff },
      replayed: replay.counters,
      reviewed,
      reconciled,
      sentPerKey,
      commissions,
      expected,
      uncertainLeft: (await effects.list({ state: 'uncertain' })).length,
      eventIds,
    };
  } finally {
    // A step that failed beside the live consumer must not leave it holding its connection.
    await live?.stop().catch(() => undefined);
    await db.close();
    await seller.close();
  }
}
