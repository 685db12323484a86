import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import type { EffectPolicy } from '../../packages/rastro/src/processing/policy.js';
import type { Processor } from '../../packages/rastro/src/processing/processor.js';
import { startServer, type RunningServer } from '../../packages/server/src/server.js';
import { hasChromium, openBrowser, SCREENSHOTS } from '../support/browser.js';
import { DATABASE_URL, schemaName } from '../support/databases.js';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'tips-processors.mjs');
const API_KEY = 'console-test-key';

async function tips(): Promise<{ processor: Processor; policy: EffectPolicy }> {
  const fixture = (await import(pathToFileURL(FIXTURE).href)) as { processors: Processor[]; TIPS_POLICY: EffectPolicy };
  return { processor: fixture.processors[0]!, policy: fixture.TIPS_POLICY };
}

/** A real server on port 0 (PostgreSQL when DATABASE_URL is set, else PGlite), with five tips handled live: one uncertain, one parked. */
async function serverWithTips(): Promise<RunningServer> {
  const schema = schemaName();
  const server = await startServer({
    port: 0, host: '127.0.0.1', logLevel: 'silent', apiKey: API_KEY, processors: FIXTURE, schema,
    ...(DATABASE_URL ? { databaseUrl: DATABASE_URL } : { dataDir: 'memory://' }),
  });
  const { processor, policy } = await tips();
  for (const [n, data] of [[1, {}], [2, {}], [3, { flaky: true }], [4, {}], [5, { bad: true }]] as const) {
    await server.store.append(`tip-${n}`, [{ type: 'tip.paid', data: { cents: n * 100, ...data } }], { expectedVersion: 'no-stream' });
  }
  await runLiveRound(processor, { store: server.store, policy, partitions: 2 });
  return server;
}

async function enterKey(page: Page): Promise<void> {
  const dialog = page.getByRole('dialog', { name: 'API key' });
  await dialog.getByLabel('API key').fill(API_KEY);
  await dialog.getByRole('button', { name: 'Use this key' }).click();
}

if (!hasChromium) console.log('/usr/bin/chromium is missing: the console browser suite is skipped (apt-get install -y chromium).');

describe.skipIf(!hasChromium)('the console in headless Chromium', () => {
  let server: RunningServer;
  let browser: Awaited<ReturnType<typeof openBrowser>>;
  const count = async (sql: string, values: unknown[] = []) =>
    (await server.db.query<{ n: number }>(sql.replaceAll('S.', `"${server.config.schema}".`), values)).rows[0]!.n;

  beforeAll(async () => {
    server = await serverWithTips();
    await server.figureHistory.sample();
    await server.figureHistory.sample();
    browser = await openBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    const schema = server?.config.schema;
    if (DATABASE_URL && schema) await server.db.query(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await server?.close();
  });

  it('asks for the key once, then shows figures that match the database and their charts', async () => {
    const { page } = browser;
    await page.goto(`${server.url}/console/`);
    await enterKey(page);
    const value = (figure: string) => page.locator(`[data-figure="${figure}"] .value`);
    await expect.poll(() => value('effects.uncertain').textContent()).toBe(String(await count(`select count(*)::int as n from S.effects where state = 'uncertain'`)));
    expect(await value('effects.uncertain').textContent()).toBe('1');
    expect(await value('effects.done').textContent()).toBe(String(await count(`select count(*)::int as n from S.effects where state = 'done'`)));
    expect(await value('parked.events').textContent()).toBe(String(await count('select count(*)::int as n from S.parked_events')));
    expect(await value('processor-lag.tips').textContent()).toBe('0 events');
    expect(await value('readers.heldBack').textContent()).toBe('0');
    // A chart per gauge, drawn from the samples serve keeps.
    for (const name of ['rastro_effects', 'rastro_parked_events', 'rastro_processor_lag_events', 'rastro_normalizer_lag_events', 'rastro_reader_held_back_events', 'rastro_outbox_lag_seconds']) {
      await expect.poll(() => page.locator(`figure.chart[data-metric="${name}"]`).count()).toBe(1);
    }
    expect(await page.locator('figure.chart[data-metric="rastro_effects"] svg path').count()).toBe(5); // one line per ledger state;
    expect(await page.evaluate(() => sessionStorage.getItem('rastro.apiKey'))).toBe(API_KEY);
    await page.screenshot({ path: join(SCREENSHOTS, 'overview.png'), fullPage: true });
    // Keyboard: the nav links are real links that take focus.
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Overview');
  });

  it('confirms an uncertain effect by clicking, and the ledger row changes', async () => {
    const { page } = browser;
    await page.goto(`${server.url}/console/#/review`);
    const row = page.locator('tr[data-effect]');
    await expect.poll(() => row.count()).toBe(1);
    const key = (await row.getAttribute('data-effect'))!;
    const state = () => server.db.query<{ state: string }>(`select state from "${server.config.schema}".effects where key = $1`, [key]).then((r) => r.rows[0]?.state);
    expect(await state()).toBe('uncertain');
    await row.getByRole('button', { name: 'Confirm it happened' }).click();
    const dialog = page.getByRole('dialog', { name: 'Confirm it happened' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await state()).toBe('uncertain');

    await row.getByRole('button', { name: 'Confirm it happened' }).click();
    await page.screenshot({ path: join(SCREENSHOTS, 'review-confirm.png') });
    await dialog.getByRole('button', { name: 'Mark done' }).click();
    await expect.poll(() => page.locator('#review-result').textContent()).toBe(`Effect ${key}: uncertain → done`);
    expect(await state()).toBe('done');
    await expect.poll(() => page.locator('tr[data-effect]').count()).toBe(0);
    expect(await page.locator('tr[data-parked-event]').count()).toBe(1);
    await page.screenshot({ path: join(SCREENSHOTS, 'review.png'), fullPage: true });

    // The parked event, retried once its handler is fixed.
    const parked = page.locator('tr[data-parked-event]');
    const eventId = (await parked.getAttribute('data-parked-event'))!;
    process.env.TIPS_FIXED = '1';
    try {
      await parked.getByRole('button', { name: 'Retry' }).click();
      await page.getByRole('dialog', { name: 'Retry parked event' }).getByRole('button', { name: 'Retry' }).click();
      await expect.poll(() => page.locator('#review-result').textContent()).toBe(`Retried event ${eventId} in run live:tips: 1 handled, 0 still parked`);
    } finally {
      delete process.env.TIPS_FIXED;
    }
    expect(await count('select count(*)::int as n from S.parked_events')).toBe(0);
    expect(await count(`select (doc->>'cents')::int as n from S.projections where key = 'tip-5'`)).toBe(500);
    await expect.poll(() => page.locator('tr[data-parked-event]').count()).toBe(0);
  });

  it('starts a simulate replay from the page, follows it to 100% and opens its diff', async () => {
    const { page } = browser;
    process.env.TIPS_MULTIPLIER = '3';
    try {
      await page.goto(`${server.url}/console/#/runs`);
      await page.getByLabel('Processor').selectOption('tips');
      await page.getByLabel('Run id (optional)').fill('console-simulate');
      expect(await page.getByLabel('Simulate: record a diff, call nothing').isChecked()).toBe(true);
      // Paced at 2 events/s, the 5 events take at least 2.5 s.
      await page.getByLabel('Max events/s (spares live traffic)').fill('2');
      expect(await page.getByLabel('Yield to live runners: read no batch ahead while they run').isChecked()).toBe(true);
      await page.getByLabel('Yield to live runners: read no batch ahead while they run').uncheck();
      const posted = page.waitForRequest((request) => request.method() === 'POST' && request.url().endsWith('/ops/replays'));
      await page.getByRole('button', { name: 'Start simulate run' }).click();
      await page.getByRole('dialog', { name: 'Start simulate run' }).getByRole('button', { name: 'Start' }).click();
      const startedAt = Date.now();
      expect((await posted).postDataJSON()).toMatchObject({ processor: 'tips', runId: 'console-simulate', simulate: true, maxRate: 2, yieldToLive: false });
      const run = page.locator('tr[data-run="console-simulate"]');
      await expect.poll(() => run.locator('.percent').getAttribute('data-percent'), { timeout: 30_000 }).toBe('100');
      // Every event handled (100%) comes a moment before the run is marked completed.
      await expect.poll(() => run.locator('.badge').textContent(), { timeout: 10_000 }).toBe('completed');
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(2_500);
      expect(await run.locator('pre.counters').textContent()).toContain('events 5');
      await page.screenshot({ path: join(SCREENSHOTS, 'runs.png'), fullPage: true });

      await run.getByRole('link', { name: 'Open diff' }).click();
      await expect.poll(() => page.locator('tr[data-key]').count()).toBe(4);
      expect(await page.locator('[data-total="changed"] .value').textContent()).toBe('4');
      expect(await page.locator('tr[data-key="tip-2"] td pre').allTextContents()).toEqual([JSON.stringify({ cents: 200 }, null, 1), JSON.stringify({ cents: 600 }, null, 1)]);
      await page.getByLabel('Key contains').fill('tip-4');
      await page.getByRole('button', { name: 'Filter' }).click();
      await expect.poll(() => page.locator('tr[data-key]').count()).toBe(1);
      expect(await page.locator('#diff-range').textContent()).toBe('1–1 of 1 keys');
      const download = page.waitForEvent('download');
      await page.getByRole('button', { name: 'Export CSV' }).click();
      const file = await (await download).path();
      const { readFile } = await import('node:fs/promises');
      expect(await readFile(file, 'utf8')).toBe('projection,key,before,after\r\ntip,tip-4,"{""cents"":400}","{""cents"":1200}"');
      await page.screenshot({ path: join(SCREENSHOTS, 'diff.png'), fullPage: true });
      expect(await page.locator('.cards .card').count()).toBe(4);
      // Simulate wrote nothing.
      expect(await count(`select (doc->>'cents')::int as n from S.projections where key = 'tip-4'`)).toBe(400);

      // Then the real one: it writes the rows.
      await page.getByRole('link', { name: '← Replay runs' }).click();
      await page.getByLabel('Processor').selectOption('tips');
      await page.getByLabel('Run id (optional)').fill('console-real');
      await page.getByLabel('Simulate: record a diff, call nothing').uncheck();
      await page.getByLabel('Effect policy (JSON)').fill(JSON.stringify({ notify: { mode: 'suppress', onFailure: 'keep' } }));
      await page.getByRole('button', { name: 'Start real run' }).click();
      await page.getByRole('dialog', { name: 'Start real run' }).getByRole('button', { name: 'Start' }).click();
      const real = page.locator('tr[data-run="console-real"]');
      await expect.poll(() => real.locator('.percent').getAttribute('data-percent'), { timeout: 30_000 }).toBe('100');
      expect(await real.locator('td').nth(2).textContent()).toBe('real replay');
      await expect.poll(() => count(`select (doc->>'cents')::int as n from S.projections where key = 'tip-4'`)).toBe(1200);
    } finally {
      delete process.env.TIPS_MULTIPLIER;
    }
  });
  it('shows the run of each parked entry, and acts on the entry of the row clicked when an event is parked in two runs', async () => {
    const { page } = browser;
    const { processor, policy } = await tips();
    await server.store.append('tip-8', [{ type: 'tip.paid', data: { cents: 800, bad: true } }], { expectedVersion: 'no-stream' });
    await runLiveRound(processor, { store: server.store, policy, partitions: 2 });
    // A replay of tip-8 alone parks it again, in its own run.
    const position = await count(`select max(position)::int as n from S.events where stream_id = 'tip-8'`);
    await runReplay(processor, { store: server.store, runId: 'tips-again', policy, fromPosition: position });
    await page.goto(`${server.url}/console/#/review`);
    const tip8 = await count(`select count(*)::int as n from S.parked_events where stream_id = 'tip-8'`);
    expect(tip8).toBe(2);
    const rows = page.locator('tr[data-parked-event]').filter({ hasText: 'tip-8' });
    await expect.poll(() => rows.count()).toBe(2);
    expect((await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-parked-run')))).sort()).toEqual(['live:tips', 'tips-again']);
    const again = page.locator('tr[data-parked-run="tips-again"]');
    expect(await again.locator('td[data-label="Run"]').textContent()).toBe('tips-again');
    const eventId = (await again.getAttribute('data-parked-event'))!;
    await again.getByRole('button', { name: 'Skip' }).click();
    await page.getByRole('dialog', { name: 'Skip parked event' }).getByRole('button', { name: 'Skip it' }).click();
    await expect.poll(() => page.locator('#review-result').textContent()).toBe(`Skipped event ${eventId} in run tips-again: 0 handled, 0 still parked`);
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.getAttribute('data-parked-run')).toBe('live:tips');
    expect(await count('select count(*)::int as n from S.parked_events where event_id = $1 and run_id = $2', [eventId, 'live:tips'])).toBe(1);
  });
});

