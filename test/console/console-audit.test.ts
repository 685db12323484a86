import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAudit } from '../../packages/rastro/src/audit/run-audit.js';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import type { EffectPolicy } from '../../packages/rastro/src/processing/policy.js';
import type { Processor } from '../../packages/rastro/src/processing/processor.js';
import { startServer, type RunningServer } from '../../packages/server/src/server.js';
import { hasChromium, openBrowser, SCREENSHOTS } from '../support/browser.js';
import { DATABASE_URL, schemaName } from '../support/databases.js';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'tips-processors.mjs');

describe.skipIf(!hasChromium)('the console\'s audit page in headless Chromium', () => {
  let server: RunningServer;
  let browser: Awaited<ReturnType<typeof openBrowser>>;

  beforeAll(async () => {
    server = await startServer({
      port: 0, host: '127.0.0.1', logLevel: 'silent', processors: FIXTURE, relay: false, schema: schemaName(),
      ...(DATABASE_URL ? { databaseUrl: DATABASE_URL } : { dataDir: 'memory://' }),
    });
    const fixture = (await import(pathToFileURL(FIXTURE).href)) as { processors: Processor[]; TIPS_POLICY: EffectPolicy };
    for (const [n, data] of [[1, {}], [2, { flaky: true }], [3, { bad: true }]] as const) {
      await server.store.append(`tip-${n}`, [{ type: 'tip.paid', data: { cents: n * 100, ...data } }], { expectedVersion: 'no-stream' });
    }
    await runLiveRound(fixture.processors[0]!, { store: server.store, policy: fixture.TIPS_POLICY, partitions: 2 });
    browser = await openBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    const schema = server?.config.schema;
    if (DATABASE_URL && schema) await server.db.query(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await server?.close();
  });

  it('says there is no audit yet, then lists the findings, each linked to the page of its row', async () => {
    const { page } = browser;
    await page.goto(`${server.url}/console/#/audit`);
    await expect.poll(() => page.getByText('No audit yet').count(), { timeout: 20_000 }).toBe(1);
    await runAudit(server.store);
    await page.reload();
    const rows = page.locator('tr[data-finding]');
    await expect.poll(() => rows.count(), { timeout: 20_000 }).toBe(2);
    expect(await page.locator('tr[data-finding]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-finding')).sort())).toEqual(['effects/uncertain', 'processors/parked']);
    const parked = page.locator('tr[data-finding="processors/parked"] a');
    expect(await parked.getAttribute('href')).toBe('#/review');
    expect(await page.locator('tr[data-check="log"]').count()).toBe(1);
    await page.screenshot({ path: join(SCREENSHOTS, 'audit.png'), fullPage: true });
    await parked.click();
    await expect.poll(() => page.locator('tr[data-effect]').count(), { timeout: 20_000 }).toBe(1);
  });
});
