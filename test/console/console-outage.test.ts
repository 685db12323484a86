import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, openBrowser, SCREENSHOTS } from '../support/browser.js';
import { populatedConsole, type PopulatedConsole } from '../support/console-server.js';
import { proxiedDatabase, type ProxiedDatabase } from '../support/database-proxy.js';
import { DATABASE_URL } from '../support/databases.js';

const UNREACHABLE = 'the database is not reachable; retry later';

describe.skipIf(!hasChromium || !DATABASE_URL)('the console while the database cannot be reached, in headless Chromium', () => {
  let proxy: ProxiedDatabase;
  let ops: PopulatedConsole;
  let browser: Awaited<ReturnType<typeof openBrowser>>;

  beforeAll(async () => {
    proxy = await proxiedDatabase(DATABASE_URL!, 'rastro-console-outage');
    ops = await populatedConsole({ databaseUrl: proxy.url });
    browser = await openBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await proxy?.restore();
    await ops?.close();
    await proxy?.close();
  });

  it('says so in a banner with the last good update, shows an error state on every page, and recovers by itself', async () => {
    const { page } = browser;
    const banner = page.locator('#outage');
    const state = page.locator('#page-state');
    await ops.open(page);
    const done = page.locator('[data-figure="effects.done"] .value');
    await expect.poll(() => done.count()).toBe(1);
    expect(await banner.isHidden()).toBe(true);

    await proxy.cut();
    // The overview keeps its figures, marked stale, under the banner and its own error.
    await expect.poll(() => banner.isVisible(), { timeout: 20_000 }).toBe(true);
    expect(await banner.textContent()).toContain(UNREACHABLE);
    // The time of the last refresh that worked, as the header still shows it.
    const lastGood = (await page.locator('#updated').textContent())!.replace('updated ', '');
    expect(lastGood).toMatch(/\d/);
    expect(await banner.textContent()).toContain(`Last good update: ${lastGood}.`);
    expect(await state.textContent()).toMatch(new RegExp(`^Could not refresh this page: ${UNREACHABLE}\\. It shows what was loaded at `));
    expect(await done.count()).toBe(1);
    expect(await page.locator('main').getAttribute('data-stale')).toBe('');
    await page.screenshot({ path: join(SCREENSHOTS, 'outage-overview.png'), fullPage: true });

    // Pages opened during the outage say why they are empty.
    for (const [hash, heading] of [['#/review', 'Review queue'], ['#/runs', 'Replay runs'], ['#/runs/console-simulate/diff', null]] as const) {
      await page.goto(`${ops.server.url}/console/${hash}`);
      await expect.poll(() => state.textContent(), { timeout: 10_000, message: hash }).toBe(`Could not load this page: ${UNREACHABLE}. It tries again on its own.`);
      expect(await banner.isVisible(), hash).toBe(true);
      if (heading) expect(await page.locator('h1').textContent()).toBe(heading);
    }
    // A fresh load knows no good update at all.
    await page.goto(`${ops.server.url}/console/#/overview`);
    await page.reload();
    await expect.poll(() => banner.textContent(), { timeout: 10_000 }).toContain('Last good update: none since this page was opened.');
    expect(await state.textContent()).toBe(`Could not load this page: ${UNREACHABLE}. It tries again on its own.`);
    await page.screenshot({ path: join(SCREENSHOTS, 'outage-fresh-load.png'), fullPage: true });

    await proxy.restore();
    await expect.poll(() => done.count(), { timeout: 30_000 }).toBe(1);
    await expect.poll(() => banner.isHidden()).toBe(true);
    expect(await state.textContent()).toBe('');
    expect(await page.locator('main').getAttribute('data-stale')).toBeNull();
    // And a page that could not start at all loads once the database is back.
    await page.goto(`${ops.server.url}/console/#/review`);
    await expect.poll(() => page.locator('tr[data-charge]').count(), { timeout: 30_000 }).toBeGreaterThan(0);
  });
});
