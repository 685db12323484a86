import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSellerNotifier } from '../../packages/server/src/demo/seller-notifier.js';
import type { EffectPolicy } from '../../packages/rastro/src/processing/policy.js';
import type { Processor } from '../../packages/rastro/src/processing/processor.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { runStatus } from '../../packages/rastro/src/processing/run-status.js';
import { hasChromium, openBrowser } from '../support/browser.js';
import { populatedConsole, SIMULATE_RUN, TIPS_FIXTURE, type PopulatedConsole } from '../support/console-server.js';
import { DATABASE_URL } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

const CHILD = join(import.meta.dirname, '../../packages/server/dist/demo/run-child.js');
const FAILING_RUN = 'truth-failing-simulate';

async function tips(): Promise<{ processor: Processor; policy: EffectPolicy }> {
  const fixture = (await import(pathToFileURL(TIPS_FIXTURE).href)) as { processors: Processor[]; TIPS_POLICY: EffectPolicy };
  return { processor: fixture.processors[0]!, policy: fixture.TIPS_POLICY };
}

/** The overview's parked-events figure, once the page has drawn it. */
async function parkedFigure(page: Page, url: string): Promise<string> {
  await page.goto(`${url}/console/#/overview`);
  const value = page.locator('[data-figure="parked.events"] .value');
  await expect.poll(() => value.count()).toBe(1);
  return (await value.textContent())!;
}

/** The parked events the review queue lists, once the page has loaded (its charges show with them). */
async function reviewParkedRows(page: Page, url: string): Promise<string[]> {
  await page.goto(`${url}/console/#/review`);
  await expect.poll(() => page.locator('tr[data-charge]').count()).toBeGreaterThan(0);
  return page.locator('tr[data-parked-event]').evaluateAll((rows) => rows.map((tr) => tr.getAttribute('data-parked-event')!).sort());
}

if (!hasChromium) console.log('/usr/bin/chromium is missing: the console truth browser suite is skipped (apt-get install -y chromium).');
if (hasChromium && !DATABASE_URL) console.log('DATABASE_URL is not set: the console\'s dead-run test is skipped (it needs PostgreSQL advisory locks).');

describe.skipIf(!hasChromium)('the console shows what the database holds, in headless Chromium', () => {
  let ops: PopulatedConsole;
  let browser: Awaited<ReturnType<typeof openBrowser>>;

  beforeAll(async () => {
    ops = await populatedConsole();
    browser = await openBrowser();
    await browser.page.addInitScript((key) => sessionStorage.setItem('rastro.apiKey', key), ops.apiKey);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await ops?.close();
  });

  it('leaves the parked figure and the review queue as they were after a failing simulate run, and shows its failures on its diff', async () => {
    const { page } = browser;
    const url = ops.server.url;
    const parked = await ops.count('select count(*)::int as n from S.parked_events');
    expect(parked).toBe(2); // tip-5 and tip-7, parked live
    const figureBefore = await parkedFigure(page, url);
    expect(figureBefore).toBe(String(parked));
    const rowsBefore = await reviewParkedRows(page, url);
    expect(rowsBefore).toHaveLength(parked);

    // A simulate run whose handler still fails on the bad tips.
    const { processor, policy } = await tips();
    await runReplay(processor, { store: ops.server.store, runId: FAILING_RUN, policy, simulate: true });
    const failures = await ops.count('select count(*)::int as n from S.simulate_failures where run_id = $1', [FAILING_RUN]);
    expect(failures).toBe(2);
    expect(await ops.count('select count(*)::int as n from S.parked_events')).toBe(parked);

    expect(await parkedFigure(page, url)).toBe(figureBefore);
    expect(await page.locator('[data-figure="parked.events"]').getAttribute('class')).toContain('alert'); // still the live run's two
    expect(await reviewParkedRows(page, url)).toEqual(rowsBefore);
    expect(await page.locator('tr[data-parked-run]').evaluateAll((rows) => rows.map((tr) => tr.getAttribute('data-parked-run')))).not.toContain(FAILING_RUN);

    // The run's own record of them: on its diff page, as failures.
    await page.goto(`${url}/console/#/runs/${FAILING_RUN}/diff`);
    const failureRows = page.locator('#diff-failures tr[data-failure]');
    await expect.poll(() => failureRows.count()).toBe(failures);
    expect(await page.locator('#diff-failures-title').textContent()).toBe(`Events the run could not handle (${failures})`);
    expect((await failureRows.locator('td:first-child').allTextContents()).sort()).toEqual(['tip-5', 'tip-7']);
    expect(await failureRows.first().locator('td').nth(3).textContent()).toBe('Error: cannot handle this tip');
  });

  it('totals the diff with the rows it shows: new keys (stored as JSON null before) and changed ones', async () => {
    const { page } = browser;
    await page.goto(`${ops.server.url}/console/#/runs/${SIMULATE_RUN}/diff`);
    const rows = page.locator('tr[data-key]');
    const stored = await ops.count('select count(*)::int as n from S.replay_diffs where run_id = $1', [SIMULATE_RUN]);
    await expect.poll(() => rows.count()).toBe(stored);
    const shown = await rows.evaluateAll((trs) => trs.map((tr) => ({ key: tr.getAttribute('data-key')!, before: tr.querySelectorAll('pre')[0]!.textContent })));
    const added = shown.filter((row) => row.before === '(none)');
    const changed = shown.filter((row) => row.before !== '(none)');
    // The two tips parked live had no row: the fixed handler would add them.
    expect(added.map((row) => row.key).sort()).toEqual(['tip-5', 'tip-7']);
    expect(changed).toHaveLength(6);
    const card = (total: string) => page.locator(`[data-total="${total}"] .value`).textContent();
    expect(await card('added')).toBe(String(added.length));
    expect(await card('changed')).toBe(String(changed.length));
    expect(await card('keys')).toBe(String(shown.length));
    const tip = page.locator('#diff-totals .card').filter({ has: page.locator('.label', { hasText: /^tip$/ }) });
    expect(await tip.locator('.value').textContent()).toBe(String(shown.length));
    expect(await tip.locator('.sub').textContent()).toBe(`${added.length} new, ${changed.length} changed`);
    expect(await page.locator('#diff-range').textContent()).toBe(`1–${shown.length} of ${shown.length} keys`);
    // The new ones are stored as JSON null before, which the page reads as nothing.
    expect(await ops.count(`select count(*)::int as n from S.replay_diffs where run_id = $1 and before = 'null'::jsonb`, [SIMULATE_RUN])).toBe(added.length);
  });

  it("marks a parked event settled once a replay did its effect, and its Retry says nothing was sent again", async () => {
    const { page } = browser;
    const url = ops.server.url;
    // The fixed handler, replayed for real: tip-5 and tip-7, parked live, are handled and notified.
    const { processor, policy } = await tips();
    process.env.TIPS_FIXED = '1';
    try {
      await runReplay(processor, { store: ops.server.store, runId: 'console-fix', policy });
      const parkedTips = await reviewParkedRows(page, url);
      expect(parkedTips).toHaveLength(2);
      for (const eventId of parkedTips) {
        const effects = page.locator(`tr[data-parked-event="${eventId}"][data-parked-run="live:tips"] td[data-label="Effects"]`);
        expect(await effects.textContent()).toBe('settled notify done by run console-fix');
        expect(await effects.locator('.badge').getAttribute('class')).toContain('tone-ok');
      }
      const row = page.locator(`tr[data-parked-event="${parkedTips[0]}"]`);
      await row.getByRole('button', { name: 'Retry' }).click();
      await page.getByRole('dialog', { name: 'Retry parked event' }).getByRole('button', { name: 'Retry' }).click();
      await expect.poll(() => page.locator('#review-result').textContent())
        .toBe(`Retried event ${parkedTips[0]} in run live:tips: 1 handled, 0 still parked; already done, not sent again: notify (by run console-fix)`);
      expect(await ops.count(`select count(*)::int as n from S.effects where event_id = $1 and state = 'done' and run_id = 'console-fix'`, [parkedTips[0]])).toBe(1);
      await expect.poll(() => page.locator('tr[data-parked-event]').count()).toBe(1);
    } finally {
      delete process.env.TIPS_FIXED;
    }
  });

  it.skipIf(!DATABASE_URL)('shows a live run whose runner was SIGKILLed as dead, since its last sign of life', async () => {
    const { page } = browser;
    const seller = await startSellerNotifier({ deduplicates: true });
    const child = spawn(process.execPath, [CHILD], {
      env: { ...process.env, MODE: 'live', RASTRO_SCHEMA: ops.server.config.schema, RASTRO_DATABASE: DATABASE_URL, SELLER_URL: seller.url },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const badge = page.locator('tr[data-run="live:commissions"] .badge');
    const shownStatus = async () => {
      await page.reload();
      return (await badge.count()) === 1 ? badge.getAttribute('data-status') : null;
    };
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
        child.once('exit', (code) => reject(new Error(`the live runner exited (${code}) before it was ready`)));
      });
      await page.goto(`${ops.server.url}/console/#/runs`);
      await expect.poll(shownStatus, { timeout: 15_000 }).toBe('running');
      expect(await badge.textContent()).toBe('running');
      child.kill('SIGKILL');
      await exited;
      await expect.poll(shownStatus, { timeout: 15_000 }).toBe('dead');
      const run = await eventually(async () => {
        const status = await runStatus(ops.server.store).get('live:commissions');
        return status?.status === 'dead' && status;
      }, 'the killed run to be dead');
      const since = await page.evaluate((iso) => new Date(iso).toLocaleString(), run.since!.toISOString());
      expect(await badge.textContent()).toBe(`dead since ${since}`);
      expect(await badge.evaluate((span) => span.className)).toContain('tone-bad');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      await seller.close();
    }
  });
});
