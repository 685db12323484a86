import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, openBrowser, SCREENSHOTS } from '../support/browser.js';
import { populatedConsole, SIMULATE_RUN, type PopulatedConsole } from '../support/console-server.js';

/** The colour of each line of a chart, by its label, as the browser draws it (`rgb(r, g, b)`). */
async function lineColours(page: Page, metric: string): Promise<Record<string, string>> {
  const figure = page.locator(`figure.chart[data-metric="${metric}"]`);
  await expect.poll(() => figure.locator('path.line').count()).toBeGreaterThan(0);
  return figure.evaluate((chart) => Object.fromEntries([...chart.querySelectorAll('path.line')].map((path) => [path.getAttribute('data-line'), getComputedStyle(path).stroke])));
}

const rgb = (colour: string) => colour.match(/\d+(\.\d+)?/g)!.slice(0, 3).map(Number) as [number, number, number];

/** The hue family a colour belongs to, which is what a reader takes from it. */
function family(colour: string): 'green' | 'red' | 'amber' | 'purple' | 'blue' | 'other' {
  const [r, g, b] = rgb(colour);
  if (g > r && g > b) return 'green';
  if (r > g && r > b && g < 0.5 * r && b < 0.5 * r) return 'red';
  if (r > g && g > b && g >= 0.5 * r) return 'amber';
  if (b > g && r > g) return 'purple';
  if (b > r && b > g) return 'blue';
  return 'other';
}

/** WCAG 2 contrast ratio of two `rgb()` colours. */
function contrast(a: string, b: string): number {
  const luminance = (colour: string) => {
    const [r, g, bl] = rgb(colour).map((v) => v / 255).map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)) as [number, number, number];
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** Every badge on the page: its status, text colour and background. */
async function badges(page: Page): Promise<{ status: string; color: string; background: string }[]> {
  return page.locator('.badge').evaluateAll((spans) => spans.map((span) => ({ status: span.getAttribute('data-status')!, color: getComputedStyle(span).color, background: getComputedStyle(span).backgroundColor })));
}

const active = (page: Page) => page.evaluate(() => ({ text: document.activeElement?.textContent, row: document.activeElement?.closest('tr')?.getAttribute('data-effect') ?? document.activeElement?.closest('tr')?.getAttribute('data-parked-event') ?? null, tag: document.activeElement?.tagName }));

if (!hasChromium) console.log('/usr/bin/chromium is missing: the console presentation browser suite is skipped (apt-get install -y chromium).');

describe.skipIf(!hasChromium)('how the console looks and reacts, in headless Chromium', () => {
  let ops: PopulatedConsole;
  let browser: Awaited<ReturnType<typeof openBrowser>>;

  beforeAll(async () => {
    ops = await populatedConsole();
    browser = await openBrowser();
    // The main page starts with the key in its tab, so each test can run alone.
    await browser.page.addInitScript((key) => sessionStorage.setItem('rastro.apiKey', key), ops.apiKey);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await ops?.close();
  });

  it('colours each status by what it means, the same in every chart and badge, with readable contrast', async () => {
    const { page } = browser;
    await page.goto(`${ops.server.url}/console/`);
    const charges = await lineColours(page, 'rastro_charges');
    const effects = await lineColours(page, 'rastro_effects');
    expect(Object.keys(charges).sort()).toEqual(['CAPTURED', 'FAILED', 'NEEDS_REVIEW', 'PENDING']);
    // The same meaning, the same colour, whichever chart: a capture is done, a failure failed.
    expect(charges.CAPTURED).toBe(effects.done);
    expect(charges.FAILED).toBe(effects.failed);
    expect(charges.PENDING).toBe(effects.uncertain);
    expect(charges.NEEDS_REVIEW).toBe(effects['needs-review']);
    expect(family(effects.done!)).toBe('green');
    expect(family(effects.failed!)).toBe('red');
    expect(family(effects.uncertain!)).toBe('amber');
    expect(family(effects['needs-review']!)).toBe('purple');
    expect(family(effects.reserved!)).toBe('blue');
    expect(new Set(Object.values(effects)).size).toBe(5);
    const legend = await page.locator('figure.chart[data-metric="rastro_charges"] .legend li[data-line="CAPTURED"] i').evaluate((swatch) => getComputedStyle(swatch).backgroundColor);
    expect(legend).toBe(charges.CAPTURED);
    // Lines and swatches stand out from the chart's background (3:1 for graphics).
    const background = await page.locator('figure.chart').first().evaluate((chart) => getComputedStyle(chart).backgroundColor);
    for (const colour of [...Object.values(charges), ...Object.values(effects)]) expect(contrast(colour, background)).toBeGreaterThanOrEqual(3);

    await page.goto(`${ops.server.url}/console/#/review`);
    await expect.poll(() => page.locator('tr[data-charge] .badge').count()).toBeGreaterThanOrEqual(2);
    await page.goto(`${ops.server.url}/console/#/runs`);
    await expect.poll(() => page.locator('tr[data-run] .badge').count()).toBeGreaterThanOrEqual(2);
    const runBadges = await badges(page);
    await page.goto(`${ops.server.url}/console/#/review`);
    await expect.poll(() => page.locator('tr[data-charge] .badge').count()).toBeGreaterThanOrEqual(2);
    const seen = [...runBadges, ...(await badges(page))];
    const families = Object.fromEntries(seen.map((b) => [b.status, family(b.color)]));
    expect(families).toMatchObject({ NEEDS_REVIEW: 'purple', PENDING: 'amber', uncertain: 'amber', failed: 'red', completed: 'green' });
    // The live run's process has ended: its badge says stopped, neither settled well nor badly.
    expect(families.stopped).toBeDefined();
    expect(['green', 'red']).not.toContain(families.stopped);
    // Badge text is readable on its background (4.5:1 for text).
    for (const b of seen) expect(contrast(b.color, b.background), b.status).toBeGreaterThanOrEqual(4.5);
  });

  it('gives focus back to the row acted on by keyboard, or the next one, and starts destructive dialogs on Cancel', async () => {
    const { page } = browser;
    await page.goto(`${ops.server.url}/console/#/review`);
    const effects = page.locator('tr[data-effect]');
    await expect.poll(() => effects.count()).toBe(2);
    const [first, second] = await effects.evaluateAll((rows) => rows.map((row) => row.getAttribute('data-effect')));

    await page.locator(`tr[data-effect="${first}"]`).getByRole('button', { name: 'Confirm it happened' }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('dialog', { name: 'Confirm it happened' }).isVisible()).toBe(true);
    expect((await active(page)).text).toBe('Mark done');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#review-result').textContent()).toBe(`Effect ${first}: uncertain → done`);
    // The row is gone: focus is on the same action of the row that took its place.
    await expect.poll(() => active(page)).toEqual({ text: 'Confirm it happened', row: second, tag: 'BUTTON' });

    // "Release for retry" calls the provider again: Cancel first, and Enter cancels.
    await page.keyboard.press('Tab');
    expect((await active(page)).text).toBe('Release for retry');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('dialog', { name: 'Release for retry' }).isVisible()).toBe(true);
    expect((await active(page)).text).toBe('Cancel');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('dialog', { name: 'Release for retry' }).isVisible()).toBe(false);
    expect(await ops.count(`select count(*)::int as n from S.effects where key = $1 and state = 'uncertain'`, [second])).toBe(1);

    // "Mark not captured" gives a charge up for good: Cancel first.
    const pending = page.locator(`tr[data-charge="${ops.charges.pending.id}"]`);
    await pending.getByRole('button', { name: 'Confirm not captured' }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('dialog', { name: 'Confirm not captured' }).isVisible()).toBe(true);
    expect((await active(page)).text).toBe('Cancel');
    await page.keyboard.press('Enter');
    expect(await ops.count(`select count(*)::int as n from S.effects where key = $1 and state = 'uncertain'`, [`charge:${ops.charges.pending.id}`])).toBe(1);

    // "Skip it" too; confirmed by Tab then Enter, focus lands on the next parked event's Skip.
    const parked = page.locator('tr[data-parked-event]');
    expect(await parked.count()).toBe(2);
    const [skipped, next] = await parked.evaluateAll((rows) => rows.map((row) => row.getAttribute('data-parked-event')));
    await page.locator(`tr[data-parked-event="${skipped}"]`).getByRole('button', { name: 'Skip' }).focus();
    await page.keyboard.press('Enter');
    const skip = page.getByRole('dialog', { name: 'Skip parked event' });
    await expect.poll(() => skip.isVisible()).toBe(true);
    expect((await active(page)).text).toBe('Cancel');
    await page.keyboard.press('Tab');
    expect((await active(page)).text).toBe('Skip it');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#review-result').textContent()).toMatch(new RegExp(`^Skipped event ${skipped} in run live:tips: `));
    await expect.poll(() => active(page)).toEqual({ text: 'Skip', row: next, tag: 'BUTTON' });
  });

  it('keeps messages in the page flow, off every button, and leaves them behind on another page', async () => {
    const { page } = browser;
    // Whatever the scroll, each button is the element at its own centre: nothing covers it.
    const uncovered = async (selector: string) => {
      for (const button of await page.locator(selector).all()) {
        await button.evaluate((element) => element.scrollIntoView({ block: 'end' }));
        expect(await button.evaluate((element) => {
          const box = element.getBoundingClientRect();
          return element.contains(document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2));
        }), await button.textContent() ?? '').toBe(true);
      }
    };
    await page.goto(`${ops.server.url}/console/#/review`);
    const parked = page.locator('tr[data-parked-event]').first();
    await expect.poll(() => parked.count()).toBe(1);
    // A retry of a handler still broken: the event stays parked, and the page says so.
    await parked.getByRole('button', { name: 'Retry' }).click();
    await page.getByRole('dialog', { name: 'Retry parked event' }).getByRole('button', { name: 'Retry' }).click();
    await expect.poll(() => page.locator('#review-result').textContent()).toMatch(/^Retried event \S+ in run live:tips: 0 handled, 1 still parked$/);
    await uncovered('tr button');

    await page.goto(`${ops.server.url}/console/#/runs/${SIMULATE_RUN}/diff`);
    await expect.poll(() => page.locator('tr[data-key]').count()).toBe(8);
    await page.getByRole('button', { name: 'Export CSV' }).click();
    await expect.poll(() => page.locator('#status').textContent()).toBe('CSV exported');
    await uncovered('main button');
    await page.getByRole('link', { name: 'Review queue' }).click();
    await expect.poll(() => page.locator('h1').textContent()).toBe('Review queue');
    expect(await page.locator('#status').textContent()).toBe('');
    expect(await page.locator('#review-result').textContent()).toBe('');
  });

  it('fits a 390 px wide screen on every page: nothing scrolls sideways and every action is on screen', async () => {
    const { page } = browser;
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      const pages: [string, string][] = [['#/overview', 'figure.chart'], ['#/runs', 'tr[data-run]'], [`#/runs/${SIMULATE_RUN}/diff`, 'tr[data-key]'], ['#/review', 'tr[data-charge]']];
      for (const [hash, data] of pages) {
        await page.goto(`${ops.server.url}/console/${hash}`);
        await expect.poll(() => page.locator(data).count(), { message: hash }).toBeGreaterThan(0);
        const { scrollWidth, clientWidth } = await page.evaluate(() => ({ scrollWidth: document.scrollingElement!.scrollWidth, clientWidth: document.scrollingElement!.clientWidth }));
        expect(scrollWidth, hash).toBeLessThanOrEqual(clientWidth);
        for (const button of await page.locator('main button').all()) {
          const box = (await button.boundingBox())!;
          expect(box.x, `${hash} ${await button.textContent()}`).toBeGreaterThanOrEqual(0);
          expect(box.x + box.width, `${hash} ${await button.textContent()}`).toBeLessThanOrEqual(390);
        }
        await page.screenshot({ path: join(SCREENSHOTS, `narrow-${hash.replace(/[^a-z]+/g, '-').replace(/^-|-$/g, '')}.png`), fullPage: true });
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('on Escape in the key dialog asks again only from the page, without saying a key was refused', async () => {
    const page = await browser.context.newPage();
    try {
      await page.goto(`${ops.server.url}/console/`);
      const dialog = page.getByRole('dialog', { name: 'API key' });
      await expect.poll(() => dialog.isVisible()).toBe(true);
      expect(await page.locator('#key-error').isHidden()).toBe(true);
      await page.keyboard.press('Escape');
      await expect.poll(() => page.locator('#page-state').textContent()).toContain("This page needs the server's API key");
      // No key was sent, so none was refused, and the dialog does not come back by itself.
      expect(await dialog.isVisible()).toBe(false);
      expect(await page.locator('#outage').isHidden()).toBe(true);

      await page.getByRole('button', { name: 'Enter the API key' }).click();
      await expect.poll(() => dialog.isVisible()).toBe(true);
      expect(await page.locator('#key-error').isHidden()).toBe(true);
      await dialog.getByLabel('API key').fill('not-the-key');
      await page.keyboard.press('Enter');
      // A key was sent this time, and refused.
      await expect.poll(() => page.locator('#key-error').isVisible()).toBe(true);
      await dialog.getByLabel('API key').fill(ops.apiKey);
      await page.keyboard.press('Enter');
      await expect.poll(() => page.locator('[data-figure="effects.done"] .value').count()).toBe(1);
      expect(await page.locator('#page-state').textContent()).toBe('');
    } finally {
      await page.close();
    }
  });

  it('serves the API docs with a key set: the page and document are open, "Try it out" sends the key entered', async () => {
    const { page } = browser;
    expect((await fetch(`${ops.server.url}/ops/figures`)).status).toBe(401);
    await page.goto(`${ops.server.url}/docs`);
    await page.getByRole('button', { name: 'Authorize' }).first().click();
    const modal = page.locator('.modal-ux');
    await modal.locator('input').fill(ops.apiKey);
    await modal.locator('button.authorize').click();
    await modal.locator('button.btn-done').click();
    const operation = page.locator('#operations-operations-getFigures');
    await operation.locator('.opblock-summary').click();
    await operation.getByRole('button', { name: 'Try it out' }).click();
    await operation.getByRole('button', { name: 'Execute' }).click();
    await expect.poll(() => operation.locator('.live-responses-table tbody .response-col_status').first().textContent(), { timeout: 10_000 }).toBe('200');
    await page.screenshot({ path: join(SCREENSHOTS, 'docs-with-key.png') });
  });
});
