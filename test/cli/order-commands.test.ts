import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../packages/rastro/src/db/open-database.js';
import { startProviderFake, type ProviderFake } from '../../packages/rastro/src/intake/provider-fake.js';
import { createServices } from '../../packages/server/src/server.js';
import { runRastro } from '../support/cli.js';


let provider: ProviderFake;
let dataDir: string;

const rastro = (args: string[]) => runRastro(args, { DATABASE_URL: '', RASTRO_DATA_DIR: dataDir, RASTRO_PROVIDER_URL: provider.url });

beforeAll(async () => {
  provider = await startProviderFake();
  dataDir = await mkdtemp(join(tmpdir(), 'rastro-orders-cli-'));
});
afterAll(() => provider?.close());

describe('the order commands on the embedded database', () => {
  it('print their usage with --help and exit 0', async () => {
    for (const [args, text] of [[['poll', '--help'], 'usage: rastro poll <source>'], [['normalize', '--help'], '--reset'], [['orders', 'renormalize', '--help'], 'usage: rastro orders renormalize'], [['demo', 'orders', '--help'], 'usage: rastro demo orders']] as const) {
      const result = await rastro([...args]);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(text);
    }
  });

  it('exit 2 naming the problem when misused', async () => {
    const cases: [string[], RegExp][] = [
      [['poll'], /poll needs the provider name/],
      [['poll', 'Bad Name'], /source: must be/],
      [['poll', 'pied', '--page-size', '0'], /--page-size must be an integer/],
      [['normalize', '--once', '--reset'], /choose --once or --reset, not both/],
      [['orders', 'renormalize'], /renormalize needs the order id/],
      [['orders', 'frobnicate'], /unknown orders command frobnicate/],
      [['normalize', '--everything'], /Unknown option '--everything'/],
    ];
    for (const [args, message] of cases) {
      const result = await rastro(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
    }
  });

  it('polls the provider, normalizes one round, re-normalizes an order and reprocesses everything', async () => {
    provider.setOrder({ orderId: '260074525', status: 'received', lastUpdate: new Date('2026-09-08T11:54:24.512Z'), customer: { name: 'C' }, invoice: { n: 1 } });
    provider.setOrder({ orderId: '260079167', status: 'requested', lastUpdate: new Date('2026-09-08T11:00:00Z') });
    const polled = await rastro(['poll', 'pied', '--page-size', '1']);
    expect(polled.stdout).toContain('2 page(s)');
    expect(polled.stdout).toContain('2 snapshot(s) stored, 0 rejected');
    expect(polled.stderr).toContain('page 2: 2 snapshots stored');
    const once = await rastro(['normalize', '--once']);
    expect(once.stdout).toContain('one round: 2 event(s) normalized');
    expect((await rastro(['normalize', '--once'])).stdout).toContain('one round: 0 event(s) normalized');
    const renormalized = await rastro(['orders', 'renormalize', 'pied:260074525']);
    expect(renormalized.stdout).toContain('order pied:260074525 re-normalized from 1 raw event(s)');
    expect((await rastro(['orders', 'renormalize', 'pied:1'])).stderr).toMatch(/RASTRO_ORDER_NOT_FOUND/);
    const reset = await rastro(['normalize', '--reset']);
    expect(reset.stdout).toMatch(/reprocess reprocess-\S+: 2 events/);
  });

  it('tells the order story with one alert, for the real cancellation, in the folder the server serves', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'rastro-orders-demo-'));
    const told = (args: string[] = []) => runRastro(['demo', 'orders', ...args], { DATABASE_URL: '', RASTRO_DATA_DIR: folder, PORT: '4321' });
    const result = await told();
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`The order story, told in the embedded database in ${folder}`);
    expect(result.stdout).toContain('its state: payment received, confirmed in the back office, paid at 2026-09-04T18:17:05.877Z; alerts 0');
    expect(result.stdout).toContain('260079309: invoice {"number":"NF-260079309"}');
    expect(result.stdout).toContain('1 alert(s) in all');
    expect(result.stdout).toContain(`The story is kept in ${folder}. Start the server on it`);
    expect(result.stdout).toContain('http://127.0.0.1:4321/console/');
    expect(result.stdout).not.toMatch(/strict mode|seed|normalizer round|recency guard/);
    // The server finds the story there: the order, normalized.
    const db = await openDatabase({ url: join(folder, 'pg') });
    try {
      expect((await createServices(db, { schema: 'rastro', snapshotEvery: 100, idempotencyTtlSeconds: 86_400 }).orders.get('pied:260065713')).state).toMatchObject({ status: 'cancelled', lifecycle: 'confirmed' });
      // Told once there: a second telling, or one while a server has the folder open, is refused.
      const inUse = await told();
      expect(inUse.code).toBe(1);
      expect(inUse.stderr).toContain(`rastro demo orders tells its story in ${folder}, which process ${process.pid} (npm start, or rastro serve) has open.`);
      expect(inUse.stderr).toContain('[RASTRO_DATABASE_IN_USE]');
    } finally {
      await db.close();
    }
    const again = await told();
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`the orders story was told in ${folder} already`);
    expect(again.stderr).toContain('[RASTRO_DEMO_ALREADY_TOLD]');
    // Another folder tells it anew.
    const elsewhere = await told(['--data-dir', await mkdtemp(join(tmpdir(), 'rastro-orders-demo-'))]);
    expect(elsewhere.code).toBe(0);
  });
});
