import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccountLedger } from '../../packages/rastro/src/accounts/account-ledger.js';
import { startSellerNotifier, type SellerNotifier } from '../../packages/server/src/demo/seller-notifier.js';
import { migrate } from '../../packages/rastro/src/db/migrate.js';
import { snapshotIntake } from '../../packages/rastro/src/intake/snapshot-intake.js';
import { openDatabase } from '../../packages/rastro/src/db/open-database.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { DATABASE_URL, schemaName } from '../support/databases.js';
import { CLI, runRastro } from '../support/cli.js';

const FIXTURE = join(import.meta.dirname, '../fixtures/processors.mjs');

/** Where the CLI keeps its data: the embedded database in a folder, or a schema of real PostgreSQL. */
interface Target {
  name: string;
  open(): Promise<{ url: string; schema: string; env: Record<string, string> }>;
}

const targets: Target[] = [
  {
    name: 'the embedded database',
    async open() {
      const dir = await mkdtemp(join(tmpdir(), 'rastro-json-cli-'));
      return { url: join(dir, 'pg'), schema: 'rastro', env: { DATABASE_URL: '', RASTRO_DATA_DIR: dir } };
    },
  },
];
const serverUrl = DATABASE_URL;
if (serverUrl) {
  targets.push({
    name: 'real PostgreSQL',
    async open() {
      const schema = schemaName();
      return { url: serverUrl, schema, env: { DATABASE_URL: serverUrl, RASTRO_SCHEMA: schema } };
    },
  });
}

describe.each(targets)('listing commands with --json, and progress when piped, on $name', (target) => {
  let seller: SellerNotifier;
  let opened: Awaited<ReturnType<Target['open']>>;
  let policyFile: string;

  const rastro = (args: string[]) => runRastro(args, { RASTRO_BROKER_URL: '', RASTRO_DEMO_NOTIFIER_URL: seller.url, ...opened.env });
  const json = async (args: string[]) => {
    const result = await rastro(args);
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    return JSON.parse(result.stdout) as unknown;
  };

  beforeAll(async () => {
    seller = await startSellerNotifier({ deduplicates: false });
    opened = await target.open();
    policyFile = join(await mkdtemp(join(tmpdir(), 'rastro-policy-')), 'policy.json');
    await writeFile(policyFile, JSON.stringify({ 'notify-seller': { mode: 'apply', onFailure: 'keep' } }));
    const db = await openDatabase({ url: opened.url });
    await migrate(db, { schema: opened.schema });
    const store = createEventStore(db, { schema: opened.schema });
    for (const [i, orderId] of ['a', 'b', 'bad'].entries()) {
      await store.append(`order-${orderId}`, [{ type: 'order.paid', data: { orderId, amountCents: 10_000 * (i + 1), percent: 5 }, occurredAt: new Date('2026-10-14T10:00:00Z') }]);
    }
    await createAccountLedger(store).open('Ana');
    for (const orderId of ['260065713', '260074525']) await snapshotIntake(store).record('pied', 'webhook', { orderId, status: 'received', lastUpdate: '2026-09-04T18:17:03.120Z' });
    await db.query(`insert into "${opened.schema}".inbox_dead_letters (broker, source, message_id, reason, body) values ('nats', 'orders.paid', 'm-1', 'not JSON', 'x')`);
    await db.close();
  });
  afterAll(async () => {
    await seller?.close();
    if (opened?.schema !== 'rastro' && DATABASE_URL) {
      const db = await openDatabase({ url: DATABASE_URL });
      await db.query(`drop schema if exists "${opened.schema}" cascade`);
      await db.close();
    }
  });

  it('replays with --json, progress lines on stderr, and shows its diff and effects as JSON rows', async () => {
    const simulated = await rastro(['replay', 'commissions', '--run-id', 'sim-1', '--simulate', '--policy', policyFile, '--json']);
    expect(simulated.code, simulated.stderr).toBe(0);
    expect(JSON.parse(simulated.stdout)).toMatchObject({ runId: 'sim-1', simulate: true, total: 3, counters: { events: 3 } });
    expect(simulated.stderr).not.toContain('\r');
    const lines = simulated.stderr.trimEnd().split('\n');
    expect(lines.at(-1)).toMatch(/^\[#{30}\] 3\/3 events {2}\d+ events\/s {2}ETA \S+$/);

    const diff = (await json(['replay', 'diff', 'sim-1', '--json'])) as { projection: string; key: string; after: unknown }[];
    expect(diff.map((row) => row.key).sort()).toEqual(['a', 'b', 'bad']);
    expect(diff.find((row) => row.key === 'a')).toMatchObject({ runId: 'sim-1', projection: 'commission', before: null, after: { orderId: 'a', commissionCents: 500 } });

    expect((await rastro(['replay', 'commissions', '--run-id', 'real-1', '--policy', policyFile])).stdout).toMatch(/applied\s+3/);
    const effects = (await json(['effects', 'list', '--json'])) as { key: string; state: string; runId: string }[];
    expect(effects).toHaveLength(3);
    expect(effects.every((effect) => effect.state === 'done' && effect.runId === 'real-1' && effect.key.endsWith(':notify-seller'))).toBe(true);
    expect(await json(['effects', 'list', '--state', 'uncertain', '--json'])).toEqual([]);
    expect(await json(['effects', 'list', '--limit', '2', '--json'])).toHaveLength(2);
  });

  it('lists parked events, outbox relays and parked messages, dead letters and the store status as JSON', async () => {
    await rastro(['replay', 'picky', '--processors', FIXTURE, '--run-id', 'picky-1']);
    const parked = (await json(['parked', 'list', '--json'])) as { eventId: string; runId: string; streamId: string; error: string }[];
    // The commissions replay's notify-seller of the same event is not picky's effect: nothing settles its entry.
    expect(parked).toMatchObject([{ runId: 'picky-1', streamId: 'order-bad', error: expect.stringContaining('cannot handle order bad'), effects: [], settled: false }]);
    expect(await json(['parked', 'list', '--run-id', 'real-1', '--json'])).toEqual([]);

    expect(await json(['outbox', 'status', '--json'])).toEqual([]);
    expect(await json(['outbox', 'parked', 'list', '--json'])).toEqual([]);
    expect(await json(['outbox', 'parked', '--json'])).toEqual([]); // list is the default

    const letters = (await json(['inbox', 'dead-letters', '--json'])) as { broker: string; message_id: string; reason: string }[];
    expect(letters).toMatchObject([{ broker: 'nats', source: 'orders.paid', message_id: 'm-1', reason: 'not JSON' }]);

    // On a shared server other sessions may be writing: the figures are the cluster's.
    const status = (await json(['store', 'status', '--json'])) as Record<string, unknown>;
    expect(Object.keys(status).sort()).toEqual(['heldBack', 'oldestPreparedMs', 'oldestWriterMs']);
    expect(status.heldBack).toEqual(expect.any(Number));
    for (const key of ['oldestWriterMs', 'oldestPreparedMs']) expect(status[key] === null || typeof status[key] === 'number', key).toBe(true);
    if (target.name === 'the embedded database') expect(status).toEqual({ heldBack: 0, oldestWriterMs: null, oldestPreparedMs: null });
  });

  it('shows the progress of a rebuild and a reprocess as plain lines when piped; a UsageError from a command exits 2', async () => {
    const rebuilt = await rastro(['snapshots', 'rebuild']);
    expect(rebuilt.stdout).toContain('account snapshots: 0 dropped, 0 written');
    expect(rebuilt.stderr).toBe('1 accounts read, 0 snapshots written\n');

    expect(await json(['normalize', '--once', '--json'])).toMatchObject({ events: 2 });
    const reset = await rastro(['normalize', '--reset', '--json']);
    expect(reset.code, reset.stderr).toBe(0);
    expect(JSON.parse(reset.stdout)).toMatchObject({ runId: expect.stringMatching(/^reprocess-/), total: 2 });
    const progress = reset.stderr.trimEnd().split('\n');
    expect(progress.every((line) => /^\[[#.]{30}\] [0-2]\/2 events {2}\d+ events\/s {2}ETA \S+$/.test(line)), reset.stderr).toBe(true);
    expect(progress.filter((line) => line.includes('2/2 events'))).toHaveLength(1); // the last state, once
    expect(progress.at(-1)).toContain('2/2 events');
    expect(await json(['orders', 'renormalize', 'pied:260065713', '--json'])).toMatchObject({ order: 'pied:260065713', total: 1 });

    const misuse = await rastro(['normalize', '--json']);
    expect(misuse).toMatchObject({ code: 2, stdout: '' });
    expect(misuse.stderr).toMatch(/^rastro: --json goes with --once or --reset\n\nusage: rastro normalize/);
  });

  it('shows a live run\'s counters as a plain line on stderr when piped, until stopped', async () => {
    const env = { ...process.env, RASTRO_BROKER_URL: '', RASTRO_DEMO_NOTIFIER_URL: seller.url, ...opened.env };
    const child = spawn(process.execPath, [CLI, 'live', 'commissions', '--policy', policyFile], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    for (let i = 0; i < 600 && !/event\(s\) handled/.test(stderr); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stdout).toMatch(/^live run \S+ started/);
    expect(stderr).toMatch(/^live run \S+: \d+ event\(s\) handled \(partitions [^)]*\)\n/);
    expect(stderr).not.toContain('\r');
  });
});
