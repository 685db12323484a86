import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commissionProcessor } from '../../packages/server/src/demo/commission.js';
import { sellerNotifierClient, startSellerNotifier, type SellerNotifier } from '../../packages/server/src/demo/seller-notifier.js';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import { migrate } from '../../packages/rastro/src/db/migrate.js';
import { openDatabase } from '../../packages/rastro/src/db/open-database.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { createServices } from '../../packages/server/src/server.js';

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '../../packages/server/dist/cli/main.js');
const FIXTURE = join(import.meta.dirname, '../fixtures/processors.mjs');

let seller: SellerNotifier;
let dataDir: string;
let policyFile: string;
let parkedEventId: string;

async function rastro(args: string[], env: Record<string, string> = {}, cwd?: string) {
  return run(process.execPath, [CLI, ...args], {
    cwd,
    env: { ...process.env, DATABASE_URL: '', RASTRO_DATA_DIR: dataDir, RASTRO_DEMO_NOTIFIER_URL: seller.url, ...env },
  });
}

beforeAll(async () => {
  seller = await startSellerNotifier({ deduplicates: false });
  dataDir = await mkdtemp(join(tmpdir(), 'rastro-cli-'));
  policyFile = join(dataDir, 'policy.json');
  await writeFile(policyFile, JSON.stringify({ 'notify-seller': { mode: 'apply', onFailure: 'keep' } }));
  const db = await openDatabase({ url: join(dataDir, 'pg') });
  await migrate(db);
  const store = createEventStore(db);
  const at = new Date('2026-10-14T10:00:00Z');
  for (const [i, orderId] of ['a', 'b', 'bad', 'c'].entries()) {
    await store.append(`order-${orderId}`, [{ type: 'order.paid', data: { orderId, amountCents: 10_000 * (i + 1), percent: 5 }, occurredAt: at }]);
  }
  await db.close();
});
afterAll(() => seller?.close());

describe('the processing commands on the embedded database', () => {
  it('simulates a replay, shows its diff as a table and CSV, then replays for real and lists effects', async () => {
    const simulated = await rastro(['replay', 'commissions', '--from', '2026-10-14T00:00:00Z', '--to', '2026-10-15T00:00:00Z', '--run-id', 'sim-1', '--simulate', '--policy', policyFile]);
    expect(simulated.stdout).toContain('run sim-1 (simulate): 4 events in range');
    expect(simulated.stdout).toMatch(/would-apply\s+4/);
    expect(simulated.stderr).toMatch(/4\/4 events .* events\/s {2}ETA/);
    expect(seller.sent).toHaveLength(0);

    const diff = await rastro(['replay', 'diff', 'sim-1', '--csv']);
    const lines = diff.stdout.trim().split('\r\n');
    expect(lines[0]).toBe('projection,key,before,after');
    expect(lines).toHaveLength(5);
    expect(lines[1]).toBe('commission,a,,"{""orderId"":""a"",""commissionCents"":500}"');

    const real = await rastro(['replay', 'commissions', '--from', '2026-10-14T00:00:00Z', '--to', '2026-10-15T00:00:00Z', '--run-id', 'fix-1', '--policy', policyFile]);
    expect(real.stdout).toMatch(/applied\s+4/);
    expect(seller.sent).toHaveLength(4);
    const effects = await rastro(['effects', 'list', '--state', 'done']);
    expect(effects.stdout.match(/:notify-seller\s+done/g)).toHaveLength(4);
  });

  it('reviews an uncertain effect: list it, resolve it as retry, and the next run sends it', async () => {
    seller.behaviour.failNext = { when: 'after-send', count: 1 };
    seller.sent.length = 0;
    await rastro(['effects', 'list']); // nothing to assert: warms the data folder
    const db = await openDatabase({ url: join(dataDir, 'pg') });
    await createEventStore(db).append('order-d', [{ type: 'order.paid', data: { orderId: 'd', amountCents: 100, percent: 5 }, occurredAt: new Date('2026-10-14T11:00:00Z') }]);
    await db.close();
    await rastro(['replay', 'commissions', '--from', '2026-10-14T00:00:00Z', '--to', '2026-10-15T00:00:00Z', '--run-id', 'fix-2', '--policy', policyFile]);
    const uncertain = await rastro(['effects', 'list', '--state', 'uncertain']);
    const key = /(\S+:notify-seller)\s+uncertain/.exec(uncertain.stdout)?.[1];
    expect(key).toBeDefined();
    const resolved = await rastro(['effects', 'resolve', key!, '--as', 'retry']);
    expect(resolved.stdout).toContain('released');
    await rastro(['replay', 'commissions', '--from', '2026-10-14T00:00:00Z', '--to', '2026-10-15T00:00:00Z', '--run-id', 'fix-3', '--policy', policyFile]);
    expect(seller.sent.filter((n) => n.orderId === 'd')).toHaveLength(2); // the lost-response send, then the reviewed retry
    expect((await rastro(['effects', 'list', '--state', 'uncertain'])).stdout).toContain('no effects');
  });

  it('parks a failing event, lists it, and retries it with the fixed processor', async () => {
    const replay = await rastro(['replay', 'picky', '--processors', FIXTURE, '--run-id', 'picky-1']);
    expect(replay.stdout).toMatch(/parked\s+1/);
    const list = await rastro(['parked', 'list', '--run-id', 'picky-1']);
    expect(list.stdout).toContain('cannot handle order bad');
    const eventId = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\s/m.exec(list.stdout)?.[1];
    // A second run parks it too: the event id alone no longer says which entry to act on.
    await rastro(['replay', 'picky', '--processors', FIXTURE, '--run-id', 'picky-2']);
    const ambiguous = await rastro(['parked', 'retry', eventId!, '--processors', FIXTURE], { PICKY_FIXED: '1' }).catch((err: { code: number; stderr: string }) => err);
    expect(ambiguous).toMatchObject({ code: 1 });
    expect((ambiguous as { stderr: string }).stderr).toContain('is parked in 2 runs (picky-1, picky-2); name the run whose entry to act on [RASTRO_PARKED_EVENT_AMBIGUOUS]');
    const retried = await rastro(['parked', 'retry', eventId!, '--run-id', 'picky-1', '--processors', FIXTURE], { PICKY_FIXED: '1' });
    expect(retried.stdout).toContain('run picky-1: 1 handled, 0 still parked');
    parkedEventId = eventId!;
  });

  it('acts on the one run an event is still parked in without --run-id', async () => {
    const eventId = parkedEventId;
    expect((await rastro(['parked', 'list'])).stdout).toMatch(new RegExp(`${eventId}\\s+picky-2`));
    const skipped = await rastro(['parked', 'skip', eventId!, '--processors', FIXTURE]);
    expect(skipped.stdout).toContain('run picky-2: 0 handled, 0 still parked');
    expect((await rastro(['parked', 'list'])).stdout).toContain('no parked events');
    expect((await rastro(['sweep'])).stdout).toContain('abandoned reservations: 0 moved to uncertain');
  });

  it('retries an alert the order normalizer parked in live:orders, as serve would', async () => {
    // Without an alert destination (serve's default) the normalizer's live run parks the alert.
    const db = await openDatabase({ url: join(dataDir, 'pg') });
    try {
      const { orders } = createServices(db, { schema: 'rastro', snapshotEvery: 100, idempotencyTtlSeconds: 86_400 });
      const snapshot = (status: string, lastUpdate: string) => orders.intake.record('pied', 'webhook', { orderId: '7', status, lastUpdate }, { capturedAt: new Date(lastUpdate) });
      await snapshot('received', '2026-09-08T10:00:00.100Z');
      await orders.normalizeRound();
      await orders.intake.recordImport({ source: 'pied', orderId: '7', outcome: 'confirmed' }, { at: new Date('2026-09-08T10:05:00Z') });
      await orders.normalizeRound();
      await snapshot('cancelled', '2026-09-08T11:00:00.250Z');
      await orders.normalizeRound();
    } finally {
      await db.close();
    }
    const list = await rastro(['parked', 'list', '--run-id', 'live:orders']);
    expect(list.stdout).toContain('no alert destination: set RASTRO_ORDER_ALERT_URL');
    const eventId = /^(\S+)\s+live:orders\s/m.exec(list.stdout)?.[1];
    expect(eventId).toBeDefined();
    const retried = await rastro(['parked', 'retry', eventId!, '--run-id', 'live:orders']);
    expect(retried.stdout).toContain('ALERT order pied:7 cancelled after import at 2026-09-08T11:00:00.250Z');
    expect(retried.stdout).toContain('run live:orders: 1 handled, 0 still parked');
    expect((await rastro(['parked', 'list'])).stdout).toContain('no parked events');
  });

  it('refuses to list the parked events of a run id no run has, such as a bare live, naming the live runs', async () => {
    const err = await rastro(['parked', 'list', '--run-id', 'live']).catch((e: { stderr: string; code: number }) => e);
    expect(err).toMatchObject({ code: 1 });
    expect((err as { stderr: string }).stderr).toContain(`runId: no run "live": a live run's id is live:<processor> (here: live:orders), a relay's relay:<name>, a replay's the id it was started with [RASTRO_VALIDATION]`);
  });

  it('loads processors from rastro.config.mjs in the working directory', async () => {
    const project = await mkdtemp(join(tmpdir(), 'rastro-project-'));
    await writeFile(
      join(project, 'rastro.config.mjs'),
      `import { defineProcessor } from ${JSON.stringify(join(import.meta.dirname, '../../packages/rastro/dist/index.js'))};
       export default { processors: [defineProcessor({ name: 'from-config', handlers: { 'order.paid': async (event, ctx) => {
         await ctx.upsert('configured', event.streamId, { ok: true }, { version: event.streamVersion });
       } } })] };`,
    );
    const replay = await rastro(['replay', 'from-config', '--run-id', 'cfg'], {}, project);
    expect(replay.stdout).toMatch(/written\s+5/);
  });

  it('spreads a replay over the partitions --partitions asks for, in batches of --batch-size', async () => {
    const out = await rastro(['replay', 'commissions', '--from', '2026-10-14T00:00:00Z', '--to', '2026-10-15T00:00:00Z', '--run-id', 'sim-parts', '--simulate', '--partitions', '3', '--batch-size', '2', '--no-yield-to-live', '--policy', policyFile, '--json']);
    const summary = JSON.parse(out.stdout);
    expect(summary).toMatchObject({ runId: 'sim-parts', simulate: true });
    expect(summary.counters.events).toBe(summary.total);
    // Progress after each batch: the first one handled two events.
    expect(out.stderr.split('\n')[0]).toMatch(/\] 2\/\d+ events/);
    const db = await openDatabase({ url: join(dataDir, 'pg') });
    try {
      const { rows } = await db.query<{ partitions: number }>(`select partitions from rastro.processor_runs where run_id = 'sim-parts'`);
      expect(rows).toEqual([{ partitions: 3 }]);
    } finally {
      await db.close();
    }
    for (const [option, value, message] of [['--partitions', '0', '--partitions must be an integer from 1 to 1024'], ['--batch-size', '20000', '--batch-size must be an integer from 1 to 10000']]) {
      const err = await rastro(['replay', 'commissions', option!, value!]).catch((e: { stderr: string; code: number }) => e);
      expect(err).toMatchObject({ code: 2 });
      expect((err as { stderr: string }).stderr).toContain(message);
    }
  });

  it('refuses a value that is not a date with exit code 2, and an unknown processor with exit code 1', async () => {
    const err = await rastro(['replay', 'commissions', '--from', 'yesterday']).catch((e: { stderr: string; code: number }) => e);
    expect(err).toMatchObject({ code: 2 });
    expect((err as { stderr: string }).stderr).toContain('--from: is not a date');
    const unknown = await rastro(['replay', 'nope']).catch((e: { stderr: string; code: number }) => e);
    expect(unknown).toMatchObject({ code: 1 });
    expect((unknown as { stderr: string }).stderr).toContain('unknown processor "nope"');
  });

  it("lists a live run's parked event as settled once a replay sent its effect, and a retry sends nothing again and says so", async () => {
    // The live run's notification fails (503), is released, and its event parked.
    const db = await openDatabase({ url: join(dataDir, 'pg') });
    try {
      const store = createEventStore(db);
      await store.append('order-e', [{ type: 'order.paid', data: { orderId: 'e', amountCents: 20_000, percent: 5 }, occurredAt: new Date('2026-10-16T10:00:00Z') }]);
      seller.behaviour.failNext = { when: 'before-send', count: 1 };
      await runLiveRound(commissionProcessor(sellerNotifierClient(seller.url)), { store, policy: { 'notify-seller': { mode: 'apply', onFailure: 'release' } } });
    } finally {
      await db.close();
    }
    const parked = await rastro(['parked', 'list', '--run-id', 'live:commissions']);
    const eventId = /^(\S+)\s+live:commissions\s+order-e\s+failed\s+Error: notifier answered 503$/m.exec(parked.stdout)?.[1];
    expect(eventId, parked.stdout).toBeDefined();

    await rastro(['replay', 'commissions', '--from', '2026-10-16T00:00:00Z', '--to', '2026-10-17T00:00:00Z', '--run-id', 'fix-e', '--policy', policyFile]);
    expect(seller.sent.filter((n) => n.orderId === 'e')).toHaveLength(1);
    const settled = await rastro(['parked', 'list', '--run-id', 'live:commissions']);
    expect(settled.stdout).toMatch(new RegExp(`^${eventId}\\s+live:commissions\\s+order-e\\s+failed\\s+settled: notify-seller done by run fix-e\\s+Error: notifier answered 503$`, 'm'));

    const retried = await rastro(['parked', 'retry', eventId!, '--run-id', 'live:commissions']);
    expect(retried.stdout).toBe(`run live:commissions: 1 handled, 0 still parked in stream order-e\nalready done, not sent again: notify-seller of event ${eventId} (done by run fix-e)\n`);
    expect(seller.sent.filter((n) => n.orderId === 'e')).toHaveLength(1);
    expect((await rastro(['parked', 'list'])).stdout).toContain('no parked events');
  });
});
