import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAudit } from '../../packages/rastro/src/audit/run-audit.js';
import { startServer, type RunningServer } from '../../packages/server/src/server.js';
import { hasChromium, openBrowser, SCREENSHOTS } from '../support/browser.js';
import { DATABASE_URL, schemaName } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

describe('the trail on the operations API and, in headless Chromium, the console', () => {
  let server: RunningServer;

  const digests = mkdtempSync(join(tmpdir(), 'rastro-digests-'));

  beforeAll(async () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    writeFileSync(join(digests, 'key.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    server = await startServer({
      port: 0, host: '127.0.0.1', logLevel: 'silent', relay: false, schema: schemaName(),
      digestPublish: `folder:${join(digests, 'out')}`, digestIntervalSeconds: 1, digestKeyFile: join(digests, 'key.pem'),
      ...(DATABASE_URL ? { databaseUrl: DATABASE_URL } : { dataDir: 'memory://' }),
    });
    for (let n = 1; n <= 5; n++) await server.store.append(`tip-${n}`, [{ type: 'tip.paid', data: { cents: n * 100 } }]);
  });
  afterAll(async () => {
    const schema = server?.config.schema;
    if (DATABASE_URL && schema) await server.db.query(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await server?.close();
    rmSync(digests, { recursive: true, force: true });
  });

  it("seals what serve's sealer reaches, and reports the seal, its lag and the last clean verification, as /metrics does", async () => {
    const trail = await eventually(async () => {
      const body = (await (await fetch(`${server.url}/ops/trail`)).json()) as { lastSeal: { block: number } | null; sealLag: { events: number } };
      return body.lastSeal !== null && body.sealLag.events === 0 && body;
    }, 'serve to seal the events', 30_000);
    expect(trail).toMatchObject({ lastSeal: { block: expect.any(Number) }, lastVerification: null, lastCleanVerificationAt: null });
    await runAudit(server.store, { checks: ['trail'] });
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/^rastro_trail_seal_lag_events 0$/m);
    const clean = Number(/^rastro_trail_last_clean_verification_timestamp_seconds (\S+)$/m.exec(metrics)?.[1]);
    expect(Math.abs(clean - Date.now() / 1000)).toBeLessThan(60);
  });

  it('publishes signed digests to the folder RASTRO_DIGEST_PUBLISH names, and says so on /ops/trail', async () => {
    const file = await eventually(() => readdirSync(join(digests, 'out')).find((name) => name.endsWith('.json')), 'a digest file', 30_000);
    const digest = JSON.parse(readFileSync(join(digests, 'out', file), 'utf8')) as { schema: string; block: number; signature?: { algorithm: string } };
    expect(digest).toMatchObject({ schema: server.config.schema, signature: { algorithm: 'Ed25519' } });
    const trail = (await (await fetch(`${server.url}/ops/trail`)).json()) as { lastDigest: { block: number; target: string } };
    expect(trail.lastDigest.target).toContain(join(digests, 'out'));
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
