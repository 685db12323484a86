import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProviderFake, type ProviderFake } from '../../src/intake/provider-fake.js';
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

  it('tells the order story end to end with one alert, for the real cancellation', async () => {
    const result = await rastro(['demo', 'orders']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('state: received, confirmed, paidAt 2026-09-04T18:17:05.877Z, alerts 0');
    expect(result.stdout).toContain('260079309: invoice {"number":"NF-260079309"}');
    expect(result.stdout).toContain('1 alert(s) in all');
    expect(result.stdout).not.toMatch(/strict mode/);
  });
});
