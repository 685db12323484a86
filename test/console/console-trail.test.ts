import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAudit } from '../../packages/rastro/src/audit/run-audit.js';
import { startServer, type RunningServer } from '../../packages/server/src/server.js';
import { hasChromium, openBrowser, SCREENSHOTS } from '../support/browser.js';
import { DATABASE_URL, schemaName } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

describe('the trail on the operations API and, in headless Chromium, the console', () => {
  let server: RunningServer;

  beforeAll(async () => {
    server = await startServer({
      port: 0, host: '127.0.0.1', logLevel: 'silent', relay: false, schema: schemaName(),
      ...(DATABASE_URL ? { databaseUrl: DATABASE_URL } : { dataDir: 'memory://' }),
    });
    for (let n = 1; n <= 5; n++) await server.store.append(`tip-${n}`, [{ type: 'tip.paid', data: { cents: n * 100 } }]);
  });
  afterAll(async () => {
    const schema = server?.config.schema;
    if (DATABASE_URL && schema) await server.db.query(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await server?.close();
  });

  it("seals what serve's sealer reaches, and reports the seal, its lag and the last clean verification, as /metrics does", async () => {
    const trail = await eventually(async () => {
      const body = (await (await fetch(`${server.url}/ops/trail`)).json()) as { lastSeal: { block: number } | null; sealLag: { events: number } };
      return body.lastSeal !== null && body.sealLag.events === 0 && body;
    }, 'serve to seal the events', 30_000);
    expect(trail).toMatchObject({ lastSeal: { block: expect.any(Number) }, lastVerification: null, lastCleanVerificationAt: null, lastDigest: null });
    await runAudit(server.store, { checks: ['trail'] });
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/^rastro_trail_seal_lag_events 0$/m);
    const clean = Number(/^rastro_trail_last_clean_verification_timestamp_seconds (\S+)$/m.exec(metrics)?.[1]);
    expect(Math.abs(clean - Date.now() / 1000)).toBeLessThan(60);
  });

  it.skipIf(!hasChromium)('shows the trail page with its last seal', async () => {
    const browser = await openBrowser();
    try {
      const { page } = browser;
      await page.goto(`${server.url}/console/#/trail`);
      await expect.poll(() => page.getByText('Last seal').count(), { timeout: 20_000 }).toBe(1);
      await expect.poll(() => page.locator('main').innerText(), { timeout: 20_000 }).toMatch(/block \d+/);
      expect(await page.locator('main').innerText()).toContain('never verified');
      await page.screenshot({ path: join(SCREENSHOTS, 'trail.png'), fullPage: true });
    } finally {
      await browser.close();
    }
  });
});
