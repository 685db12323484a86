import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Database } from 'rastro/internal/db/database.js';
import { migrate } from 'rastro/internal/db/migrate.js';
import { openDatabase } from 'rastro/internal/db/open-database.js';
import { effectLedger } from 'rastro/internal/processing/effect-admin.js';
import { runLive, type LiveRunner } from 'rastro/internal/processing/live-runner.js';
import { addReports, reconcileEffects, type ReconcileReport } from 'rastro/internal/processing/ledger/reconciler.js';
import type { Processor } from 'rastro/internal/processing/processor.js';
import { runReplay } from 'rastro/internal/processing/replay-runner.js';
import { runDiff, type DiffRow } from 'rastro/internal/processing/run-diff.js';
import { createEventStore, type EventStore } from 'rastro/internal/store/event-store.js';
import { commissionCents, commissionProcessor, NOTIFY_SELLER, ORDER_PAID } from './commission.js';
import { commissionOrders, DAY_FROM, DAY_TO, NEXT_DAY, type PaidOrder } from './commission-orders.js';
import { sellerNotifierClient, startSellerNotifier, type SellerNotifier } from './seller-notifier.js';

export interface StoryOptions {
  /** A postgres:// URL or a PGlite folder (not memory://: a second process opens it). */
  url: string;
  schema: string;
  /** Orders paid on the day; a multiple of 8 keeps the story's arithmetic whole. @defaultValue 40 */
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
  /** Commissions the buggy release wrote before it was killed (every one wrong). */
  writtenWrong: number;
  /** Reservations the killed process left, marked uncertain. */
  leftUncertain: number;
  simulated: { counters: Record<string, number>; diff: DiffRow[] };
  /** What the fixed live consumer did before the replay: events handled, notifications sent. */
  live: { events: number; sent: number; uncertain: number };
  replayed: Record<string, number>;
  /** The day's commissions the replay changed, found right already, or left at version 2. */
  replay: { corrected: number; alreadyRight: number; newerVersion: number; newOrdersMeanwhile: number; sentByLiveMeanwhile: number };
  /** Uncertain effects found for review, and how each was resolved. */
  reviewed: { key: string; resolvedAs: 'done' | 'retry' }[];
  /** With `askProvider`: what reconciliation found. */
  reconciled: ReconcileReport | undefined;
  /** Notifications the second replay sent (those found never sent). */
  sentAfterSettling: number;
  /** Notifications the seller received per effect key. */
  sentPerKey: Map<string, number>;
  commissions: Map<string, { commissionCents: number; version: number }>;
  /** The expected commission per order: the fixed formula on its latest version. */
  expected: Map<string, { commissionCents: number; version: number }>;
  uncertainLeft: number;
  eventIds: string[];
}

const policy = { [NOTIFY_SELLER]: { mode: 'apply', onFailure: 'keep' } } as const;
/** The buggy consumer handles events four at a time, one notification after another. */
const BUGGY_BATCH = 4;
/** The live consumer's script, compiled: from src/ (tests) it is the one in dist/. */
function childScript(): string {
  const beside = fileURLToPath(new URL('./run-child.js', import.meta.url));
  return existsSync(beside) ? beside : fileURLToPath(new URL('../../dist/demo/run-child.js', import.meta.url));
}

async function until(condition: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const start = Date.now();
  while (!(await condition())) {
    if (Date.now() - start > ms) throw new Error(`the story stalled waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function commissionRows(store: EventStore) {
  const { rows } = await store.db.query<{ key: string; doc: { commissionCents: number }; version: number }>(
    `select key, doc, version from "${store.schema}".projections where projection = 'commission'`,
  );
  return new Map(rows.map((row) => [row.key, { commissionCents: row.doc.commissionCents, version: Number(row.version) }]));
}

async function pay(store: EventStore, orders: PaidOrder[], occurredAt: (i: number) => Date, version?: number): Promise<void> {
  for (const [i, order] of orders.entries()) {
    await store.append(`order-${order.orderId}`, [{ type: ORDER_PAID, data: { ...order }, occurredAt: occurredAt(i) }], version === undefined ? {} : { expectedVersion: version - 1 });
  }
}

/**
 * The buggy release's consumer, in its own process: the notifier answers `answered`
 * notifications, then holds the next request unanswered, and the process is killed there.
 */
async function killBuggyConsumer(options: StoryOptions, seller: SellerNotifier, answered: number): Promise<void> {
  seller.behaviour.holdAfter = answered;
  const child = spawn(process.execPath, [childScript()], {
    env: {
      ...process.env, MODE: 'live', RASTRO_DATABASE: options.url, RASTRO_SCHEMA: options.schema, SELLER_URL: seller.url,
      DIVISOR: '1000', BATCH_SIZE: String(BUGGY_BATCH), EFFECT_CONCURRENCY: '1',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let exitCode: number | null | undefined;
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve((exitCode = code))));
  try {
    await until(() => seller.held.length > 0 || exitCode !== undefined, 60_000, 'the notifier to hang');
  } finally {
    child.kill('SIGKILL');
    await exited;
    seller.behaviour.holdAfter = undefined;
  }
  if (seller.held.length === 0) throw new Error(`the live consumer process exited by itself (${exitCode}): ${stderr.slice(0, 500)}`);
}

/**
 * Marks the dead process's reservations uncertain. On a server its session lock goes a moment
 * after the process (when PostgreSQL sees the connection close): sweep until none is left.
 */
async function sweepDeadReservations(store: EventStore): Promise<{ uncertain: number }> {
  const effects = effectLedger(store);
  let uncertain = 0;
  const start = Date.now();
  do {
    uncertain += (await effects.sweep()).uncertain;
    if ((await effects.list({ state: 'reserved' })).length === 0) return { uncertain };
    await new Promise((resolve) => setTimeout(resolve, 50));
  } while (Date.now() - start < 30_000);
  throw new Error('the story stalled waiting for the killed process to let go of its reservations');
}

interface Stage {
  options: StoryOptions;
  log: (line: string) => void;
  store: EventStore;
  seller: SellerNotifier;
  /** The fixed code; with `askProvider`, its notifications can be reconciled. */
  fixed: Processor;
  orders: PaidOrder[];
}

async function simulateFix(stage: Stage): Promise<StoryReport['simulated']> {
  const { store, fixed, orders, log } = stage;
  const simulation = await runReplay(fixed, { store, runId: 'fix-2026-10-14-simulate', from: DAY_FROM, to: DAY_TO, policy, simulate: true });
  const diff = await runDiff(store, 'fix-2026-10-14-simulate');
  const wrong = diff.filter((row) => row.before !== null).length;
  const wouldSend = simulation.counters['would-apply'] ?? 0;
  const onRecord = simulation.counters['already-recorded'] ?? 0;
  log(`3. A dry run of the fix over the day (simulate: nothing written, no one notified):`);
  log(`   ${diff.length} commissions would change: ${wrong} wrong ones corrected, ${diff.length - wrong} computed for the first time`);
  log(`   notifications: ${wouldSend} would be sent, ${onRecord} are on record already and would not be sent again (${wouldSend} + ${onRecord} = ${orders.length})`);
  return { counters: simulation.counters, diff };
}

/** The fixed consumer goes live where the dead one stopped; then some orders are revised. */
async function goLiveWithFix(stage: Stage, live: LiveRunner, revised: PaidOrder[]): Promise<StoryReport['live']> {
  const { store, seller, orders, log } = stage;
  const sentBefore = seller.sent.length;
  await until(async () => (await commissionRows(store)).size === orders.length, 60_000, 'the live consumer to reach the end of the day');
  const sentOnTheDay = seller.sent.length - sentBefore;
  const handled = live.counters.get('events');
  log(`4. The fixed consumer goes live from where the dead one stopped: ${handled} orders handled, ${sentOnTheDay} sellers notified`);
  log(`   (the notifier delivered ${live.counters.get('uncertain')} of them without confirming it: uncertain); the uncertain notifications of step 2 are left alone: nothing is sent again on a guess`);
  await pay(store, revised, () => NEXT_DAY, 2);
  await until(async () => {
    const rows = await commissionRows(store);
    return revised.every((order) => rows.get(order.orderId)?.version === 2);
  }, 30_000, 'the revised orders');
  log(`   ${revised.length} orders are revised on 2026-10-15 (a second payment, version 2 of each): ${revised.length} commissions recomputed, ${seller.sent.length - sentBefore - sentOnTheDay} sellers notified`);
  return { events: live.counters.get('events'), sent: seller.sent.length - sentBefore, uncertain: live.counters.get('uncertain') };
}

/** The replay of the day with the fix, while the live consumer takes the next day's new orders. */
async function replayBesideLive(stage: Stage, live: LiveRunner, newOrders: PaidOrder[]): Promise<{ counters: Record<string, number>; replay: StoryReport['replay'] }> {
  const { store, fixed, orders, log } = stage;
  const before = await commissionRows(store);
  const liveEvents = live.counters.get('events');
  const sentBefore = stage.seller.sent.length;
  const [replayed] = await Promise.all([
    runReplay(fixed, { store, runId: 'fix-2026-10-14', from: DAY_FROM, to: DAY_TO, policy, batchSize: 8 }),
    pay(store, newOrders, (i) => new Date(NEXT_DAY.getTime() + (i + 1) * 60_000)),
  ]);
  await until(async () => (await commissionRows(store)).size === orders.length + newOrders.length, 30_000, 'the new orders');
  const after = await commissionRows(store);
  const newerVersion = replayed.counters['ignored-newer-version'] ?? 0;
  const corrected = orders.filter((order) => before.get(order.orderId)!.commissionCents !== after.get(order.orderId)!.commissionCents).length;
  const alreadyRight = orders.length - corrected - newerVersion;
  const newOrdersMeanwhile = live.counters.get('events') - liveEvents;
  const sentByLiveMeanwhile = stage.seller.sent.length - sentBefore - (replayed.counters.applied ?? 0);
  log(`5. The replay of 2026-10-14 with the fix, while the live consumer keeps going: ${replayed.counters.events ?? 0} orders replayed,`);
  log(`   ${corrected} commissions corrected, ${alreadyRight} already right, ${newerVersion} left at their newer version 2 (${corrected} + ${alreadyRight} + ${newerVersion} = ${orders.length});`);
  log(`   ${replayed.counters.applied ?? 0} notifications sent, ${replayed.counters['already-recorded'] ?? 0} on record already. Meanwhile the live consumer took ${newOrdersMeanwhile} new orders of 2026-10-15 and notified ${sentByLiveMeanwhile} sellers`);
  return { counters: replayed.counters, replay: { corrected, alreadyRight, newerVersion, newOrdersMeanwhile, sentByLiveMeanwhile } };
}

/** Uncertain notifications, settled by asking the provider (or by a person), then the missing ones sent. */
async function settleUncertain(stage: Stage): Promise<Pick<StoryReport, 'reviewed' | 'reconciled' | 'sentAfterSettling'>> {
  const { store, fixed, seller, options, log } = stage;
  const effects = effectLedger(store);
  const uncertain = await effects.list({ state: 'uncertain' });
  const reviewed: StoryReport['reviewed'] = [];
  let reconciled: ReconcileReport | undefined;
  if (options.askProvider) {
    // The provider is asked about each key once a call can no longer be on its way.
    const start = Date.now();
    while ((await effects.list({ state: 'uncertain' })).length > 0 && Date.now() - start < 30_000) {
      const report = await reconcileEffects(store, { types: fixed.effects! });
      reconciled = reconciled ? addReports(reconciled, report) : report;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } else {
    // A person checks the notifier's log for each key.
    for (const effect of uncertain) {
      const sent = seller.sent.some((notification) => notification.idempotencyKey === effect.key);
      await effects.resolve(effect.key, sent ? 'done' : 'retry');
      reviewed.push({ key: effect.key, resolvedAs: sent ? 'done' : 'retry' });
    }
  }
  const delivered = reconciled ? reconciled.happened : reviewed.filter((r) => r.resolvedAs === 'done').length;
  const released = reconciled ? reconciled.released : reviewed.filter((r) => r.resolvedAs === 'retry').length;
  const sentBefore = seller.sent.length;
  if (released > 0) await runReplay(fixed, { store, runId: 'fix-2026-10-14-missing', from: DAY_FROM, to: DAY_TO, policy });
  const sentAfterSettling = seller.sent.length - sentBefore;
  const who = options.askProvider ? 'Reconciliation asks the notifier about' : 'A person checks the notifier\'s log for';
  log(`6. ${who} the ${uncertain.length} uncertain notifications: ${delivered} had been delivered (marked sent), ${released} had not (released, to be sent);`);
  log(`   a second replay of the day sends those ${sentAfterSettling}${options.askProvider ? ', and no one had to decide anything' : ''}`);
  return { reviewed, reconciled, sentAfterSettling };
}

/**
 * The seed's story, end to end and the same on every run: a day of orders whose commissions a
 * buggy release computes ten times too small (it divides by 1,000 instead of 100); its consumer killed with SIGKILL while the
 * notifier hangs; a dry run of the fix; the fixed consumer live; the replay of the day beside it;
 * the uncertain notifications settled by asking the provider (or by a person), and what was never
 * sent sent once. Every figure it prints adds up.
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
    const { orders, revised, newOrders } = commissionOrders(count);
    await pay(createEventStore(db, { schema: options.schema }), orders, (i) => new Date(DAY_FROM.getTime() + (8 * 60 + i * 10) * 60_000));
    log(`Sellers earn a commission on each paid order (its amount × the seller's percent), and are notified of it.\n`);
    log(`1. ${count} orders are paid on 2026-10-14 (${(orders[0]!.amountCents / 100).toFixed(2)} to ${(orders[count - 1]!.amountCents / 100).toFixed(2)} BRL, commissions of 5 % to 8 %)`);

    // 2. The buggy release, in its own process (the database is its while it runs).
    if (embedded) await db.close();
    const answered = Math.floor(count / 2 / BUGGY_BATCH) * BUGGY_BATCH;
    await killBuggyConsumer(options, seller, answered);
    if (embedded) db = await openDatabase({ url: options.url });
    const store = createEventStore(db, { schema: options.schema });
    const swept = await sweepDeadReservations(store);
    const writtenWrong = (await commissionRows(store)).size;
    log(`2. A release with a bug goes live: it divides by 1,000 instead of 100, so a 5 % commission is paid as 0.5 %.`);
    log(`   Its consumer notifies ${seller.sent.length} sellers of their wrong commission; then the notifier stops answering, and the process is killed (SIGKILL) while it waits.`);
    log(`   Left behind: ${writtenWrong} commissions written wrong; the ${swept.uncertain} notifications of the orders it was working on (it takes ${BUGGY_BATCH} at a time), marked uncertain: each may or may not have gone out; ${count - writtenWrong - swept.uncertain} orders not reached`);
    const sentBeforeKill = seller.sent.length;

    // With a provider that can be asked, a notification still on its way after 1.5 s is impossible: the client gives up after 1 s.
    const client = sellerNotifierClient(seller.url, { timeoutMs: 1_000 });
    const fixed = commissionProcessor(client, { askProvider: options.askProvider, settleMs: 1_500 });
    const stage: Stage = { options, log, store, seller, fixed, orders };
    const simulated = await simulateFix(stage);

    // The live consumer does not reconcile on its own here: step 6 does, so its figures are the story's.
    seller.behaviour.failNext = { when: 'after-send', count: 1 };
    live = await runLive(commissionProcessor(client), { store, policy, pollIntervalMs: 50, batchSize: 10 });
    const liveFigures = await goLiveWithFix(stage, live, revised);
    const replayed = await replayBesideLive(stage, live, newOrders);
    await live.stop();
    const settled = await settleUncertain(stage);
    return await conclude(stage, { sentBeforeKill, writtenWrong, leftUncertain: swept.uncertain, simulated, live: liveFigures, replayed: replayed.counters, replay: replayed.replay, ...settled }, revised, newOrders);
  } finally {
    // A step that failed beside the live consumer must not leave it holding its connection.
    await live?.stop().catch(() => undefined);
    await db.close();
    await seller.close();
  }
}

type Told = Omit<StoryReport, 'orders' | 'sentPerKey' | 'commissions' | 'expected' | 'uncertainLeft' | 'eventIds'>;

/** The result: every commission right, every payment notified once. */
async function conclude(stage: Stage, told: Told, revised: PaidOrder[], newOrders: PaidOrder[]): Promise<StoryReport> {
  const { store, seller, orders, log } = stage;
  const sentPerKey = new Map<string, number>();
  for (const notification of seller.sent) sentPerKey.set(notification.idempotencyKey!, (sentPerKey.get(notification.idempotencyKey!) ?? 0) + 1);
  const expected = new Map([...orders, ...newOrders].map((order) => [order.orderId, { commissionCents: commissionCents(order.amountCents, order.percent), version: 1 }]));
  for (const order of revised) expected.set(order.orderId, { commissionCents: commissionCents(order.amountCents, order.percent), version: 2 });
  const commissions = await commissionRows(store);
  const eventIds = (await store.readAll({ limit: 10_000 })).map((event) => event.id);
  const twice = [...sentPerKey.values()].filter((n) => n > 1).length;
  const missing = eventIds.filter((id) => !sentPerKey.has(`${id}:${NOTIFY_SELLER}`)).length;
  const right = [...expected].filter(([id, value]) => commissions.get(id)?.commissionCents === value.commissionCents && commissions.get(id)?.version === value.version).length;
  log(`7. Result: ${right} of ${expected.size} commissions right; ${eventIds.length} payments, ${seller.sent.length} notifications (${told.sentBeforeKill} before the kill + ${told.live.sent + told.replay.sentByLiveMeanwhile} by the live consumer + ${told.sentAfterSettling} by the second replay), ${twice} sent twice, ${missing} missing`);
  return { orders: orders.length, ...told, sentPerKey, commissions, expected, uncertainLeft: (await effectLedger(store).list({ state: 'uncertain' })).length, eventIds };
}
